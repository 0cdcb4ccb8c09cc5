"""Provenance where users look: every Delta output (path or catalog table) carries ε, δ, ρ, engine,
version, fit id and MLflow run id in its table properties, its commit's userMetadata and its comment."""

import json
import os
import uuid

import mlflow
import pytest

from spark_synth._version import __version__
from spark_synth.cli import main
from spark_synth.errors import OutputError
from spark_synth.io import Provenance, check_output, filesystem, quote_table_name, read_input, write_output
from spark_synth.io.writers import USER_METADATA_CONF

pytestmark = pytest.mark.spark

FIRST = Provenance(epsilon=1.0, delta=1e-9, rho=0.0123, engine="independent", version=__version__,
                   fit_id="fit-one", mlflow_run_id="0123456789abcdef0123456789abcdef")
SECOND = Provenance(epsilon=0.5, delta=1e-6, rho=0.004, engine="splice", version=__version__, fit_id="fit-two")


def detail(spark, identifier: str) -> dict:
    return spark.sql(f"DESCRIBE DETAIL {identifier}").first().asDict()


def history(spark, identifier: str) -> list[tuple[int, str, str | None]]:
    rows = spark.sql(f"DESCRIBE HISTORY {identifier}").orderBy("version").collect()
    return [(r["version"], r["operation"], r["userMetadata"]) for r in rows]


def spark_synth_properties(props: dict) -> dict:
    return {k: v for k, v in props.items() if k.startswith("spark_synth.")}


def test_provenance_values_are_exact_strings_and_absent_run_id_stays_absent():
    props = FIRST.to_properties()
    assert props == {
        "spark_synth.synthetic": "true", "spark_synth.dp": "true", "spark_synth.epsilon": "1.0",
        "spark_synth.delta": "1e-09", "spark_synth.rho": "0.0123", "spark_synth.neighbouring_relation": "add/remove one row",
        "spark_synth.engine": "independent", "spark_synth.version": __version__, "spark_synth.fit_id": "fit-one",
        "spark_synth.mlflow_run_id": "0123456789abcdef0123456789abcdef",
    }
    assert "spark_synth.mlflow_run_id" not in SECOND.to_properties()
    assert json.loads(SECOND.user_metadata())["spark_synth"]["mlflow_run_id"] is None
    assert json.loads(FIRST.user_metadata()) == {"spark_synth": {k[len("spark_synth."):]: v for k, v in props.items()}}
    assert FIRST.comment().startswith(f"Differentially private (DP) synthetic data made by spark-synth {__version__}")
    not_dp = Provenance(**{**FIRST.__dict__, "dp": False})
    assert "NOT covered by a DP guarantee" in not_dp.comment() and not_dp.to_properties()["spark_synth.dp"] == "false"


@pytest.mark.parametrize("kind", ["path", "table"])
def test_delta_outputs_carry_provenance_in_one_commit_and_a_replace_keeps_nothing_stale(spark, tmp_path, kind):
    frame = spark.range(7).selectExpr("id", "cast(id * 2 as string) AS label")
    if kind == "path":
        target = str(tmp_path / "synthetic")
        identifier = f"delta.`{target}`"
    else:
        target = f"`default`.`prov_{uuid.uuid4().hex[:8]}`"  # a quoted name: a table, not a path
        identifier = quote_table_name(target)
    spark.conf.unset(USER_METADATA_CONF)
    try:
        location = check_output(spark, target)
        assert location.is_table == (kind == "table")
        write_output(spark, frame, location, provenance=FIRST)
        assert spark.conf.get(USER_METADATA_CONF, None) is None  # the session setting is put back
        first = detail(spark, identifier)
        assert spark_synth_properties(first["properties"]) == FIRST.to_properties()
        assert first["description"] == FIRST.comment()
        assert history(spark, identifier) == [(0, "CREATE TABLE AS SELECT", FIRST.user_metadata())]
        if kind == "table":
            assert spark.catalog.getTable(target).description == FIRST.comment()

        # --overwrite: one more commit, the rows and all three records replaced; an earlier user setting survives
        spark.conf.set(USER_METADATA_CONF, "the user's own note")
        write_output(spark, frame.limit(3), check_output(spark, target, True), True, provenance=SECOND)
        assert spark.conf.get(USER_METADATA_CONF) == "the user's own note"
        second = detail(spark, identifier)
        assert spark_synth_properties(second["properties"]) == SECOND.to_properties()  # no stale mlflow_run_id
        assert second["description"] == SECOND.comment()
        assert history(spark, identifier)[1] == (1, "CREATE OR REPLACE TABLE AS SELECT", SECOND.user_metadata())
        assert spark.table(identifier).count() == 3
        if kind == "table":  # a quoted name reads back as that table too
            assert read_input(spark, target).count() == 3
    finally:
        spark.conf.unset(USER_METADATA_CONF)
        if kind == "table":
            spark.sql(f"DROP TABLE IF EXISTS {identifier}")


def test_a_relative_delta_path_is_written_where_it_says(spark, tmp_path):
    """Regression: Delta reads ``delta.`rel/path``` as a table ``rel/path`` in a schema ``delta``, not a path."""
    assert filesystem.qualified(spark, ".") == f"file:{os.getcwd()}"  # the JVM resolves relative paths from here too
    relative = os.path.relpath(tmp_path / "sub" / "out")  # ../../tmp/pytest-…/sub/out: nothing written in the repo
    write_output(spark, spark.range(4), check_output(spark, relative), provenance=SECOND)
    write_output(spark, spark.range(2), check_output(spark, relative + "/", True), True, provenance=FIRST)
    assert spark.read.format("delta").load(str(tmp_path / "sub" / "out")).count() == 2
    assert spark_synth_properties(detail(spark, f"delta.`{tmp_path / 'sub' / 'out'}`")["properties"]) == FIRST.to_properties()
    assert sorted(p.name for p in (tmp_path / "sub").iterdir()) == ["out"]


def test_a_name_the_local_catalog_refuses_is_one_output_error(spark):
    """Unity Catalog takes main.default.`my-table`; the local (Hive) catalog does not: a user error, not a crash."""
    name = f"default.`my-table-{uuid.uuid4().hex[:6]}`"
    with pytest.raises(OutputError, match=r"is not a valid table name in this catalog .*; choose another name"):
        write_output(spark, spark.range(2), check_output(spark, name), provenance=FIRST)
    assert not spark.catalog.tableExists(name)


def test_parquet_and_csv_outputs_are_unchanged(spark, tmp_path):
    for name in ("out.parquet", "out.csv"):
        target = str(tmp_path / name)
        write_output(spark, spark.range(3), check_output(spark, target), provenance=FIRST)
        assert not (tmp_path / name / "_delta_log").exists()
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def _cli(capsys, *args) -> dict:
    code = main(list(args))
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


def test_run_and_sample_record_their_fit(spark, spark_home, adult_sample_paths, tmp_path, capsys, monkeypatch):
    """`run --no-mlflow` records no run id; `sample` of a tracked `fit` records that fit's run id and spend."""
    monkeypatch.setenv("SPARK_SYNTH_LEDGER_PREFIX", f"test-{uuid.uuid4().hex[:8]}:")
    data, schema = adult_sample_paths
    common = ["--input", data, "--schema", schema, "--engine", "independent", "--epsilon", "1", "--delta", "1e-9"]
    ran = _cli(capsys, "run", *common, "--rows", "20", "--output", str(tmp_path / "ran"), "--seed", "1", "--no-mlflow")
    props = detail(spark, f"delta.`{tmp_path / 'ran'}`")["properties"]
    assert props["spark_synth.fit_id"] == ran["fit_id"] and props["spark_synth.engine"] == "independent"
    assert props["spark_synth.epsilon"] == repr(ran["epsilon_spent"]) and props["spark_synth.rho"] == repr(ran["rho_spent"])
    assert "spark_synth.mlflow_run_id" not in props and ran["mlflow_run_id"] is None
    assert json.loads(history(spark, f"delta.`{tmp_path / 'ran'}`")[0][2])["spark_synth"]["mlflow_run_id"] is None

    fitted = _cli(capsys, "fit", *common, "--model", str(tmp_path / "model"))
    assert fitted["mlflow_run_id"]
    sampled = _cli(capsys, "sample", "--model", str(tmp_path / "model"), "--rows", "20", "--output", str(tmp_path / "sampled"))
    props = detail(spark, f"delta.`{sampled['output']}`")["properties"]
    assert props["spark_synth.fit_id"] == fitted["fit_id"] != ran["fit_id"]
    assert props["spark_synth.mlflow_run_id"] == fitted["mlflow_run_id"]
    assert props["spark_synth.epsilon"] == repr(fitted["epsilon_spent"]) and props["spark_synth.delta"] == "1e-09"
    mlflow.set_tracking_uri(f"sqlite:///{spark_home / 'mlflow.db'}")
    assert mlflow.get_run(fitted["mlflow_run_id"]).data.tags["spark_synth.fit_id"] == props["spark_synth.fit_id"]
