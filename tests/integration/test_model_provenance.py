"""Rows sampled from a logged or registered MLflow model carry the same provenance as ``Synthesizer.write``
(ε, δ, ρ, fit id, engine, run id) plus the model they came from — its URI and the registered name and
version it resolved to — in one all-or-nothing Delta commit; ``spark-synth sample --model URI`` too."""

from __future__ import annotations

import json
import uuid

import pytest

from spark_synth import Synthesizer, load_schema
from spark_synth._version import __version__
from spark_synth.cli import main
from spark_synth.errors import OutputError, UserInputError
from spark_synth.io import Provenance, SourceModel, read_input
from spark_synth.track import log_synthesizer, mlflow_run, release, resolve_model, sample_model, write_model_sample

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def registered(spark, spark_home, adult_sample_paths):
    """One fit logged with ``log_synthesizer`` (its saved state has no run id), released twice:
    version 1 under alias ``champion``, then version 2."""
    data, schema = adult_sample_paths
    synth = Synthesizer("independent", epsilon=0.7, delta=1e-8).fit(read_input(spark, data), load_schema(schema))
    with mlflow_run("model-provenance-test") as run:
        info = log_synthesizer(synth, source=data)
    name = f"prov_synth_{uuid.uuid4().hex[:6]}"
    prefix = f"test-{uuid.uuid4().hex[:6]}:"
    first = release(run.info.run_id, name, ledger_prefix=prefix, alias="champion")
    second = release(run.info.run_id, name, ledger_prefix=prefix)
    assert (first["version"], second["version"]) == ("1", "2")
    return synth, info, run.info.run_id, name


def detail(spark, path) -> dict:
    return spark.sql(f"DESCRIBE DETAIL delta.`{path}`").first().asDict()


def history(spark, path) -> list[tuple[int, str, str | None]]:
    rows = spark.sql(f"DESCRIBE HISTORY delta.`{path}`").orderBy("version").collect()
    return [(r["version"], r["operation"], r["userMetadata"]) for r in rows]


def test_source_model_adds_its_keys_only_when_set():
    base = dict(epsilon=1.0, delta=1e-9, rho=0.01, engine="independent", version=__version__, fit_id="f")
    plain = Provenance(**base)
    model = SourceModel(uri="models:/m@champion", registered_model="m", version="3", alias="champion", run_id="r")
    sampled = Provenance(**base, mlflow_run_id="r", source_model=model)
    assert not any("model" in k for k in plain.to_properties()) and "MLflow" not in plain.comment()
    props = sampled.to_properties()
    assert {k: v for k, v in props.items() if "model" in k} == {
        "spark_synth.model_uri": "models:/m@champion", "spark_synth.registered_model": "m",
        "spark_synth.model_version": "3", "spark_synth.model_alias": "champion"}
    assert json.loads(sampled.user_metadata()) == {"spark_synth": {k[len("spark_synth."):]: v for k, v in props.items()}}
    assert "(here: the MLflow model models:/m@champion (registered model m, version 3))" in sampled.comment()
    run_only = SourceModel(uri="runs:/r/model", run_id="r").to_properties()
    assert run_only == {"spark_synth.model_uri": "runs:/r/model"}


def test_an_alias_and_latest_resolve_to_their_versions(registered):
    synth, _, run_id, name = registered
    champion, pinned = resolve_model(f"models:/{name}@champion")
    assert champion == SourceModel(uri=f"models:/{name}@champion", registered_model=name, version="1",
                                   alias="champion", run_id=run_id)
    assert pinned == f"models:/{name}/1"
    latest, pinned = resolve_model(f"models:/{name}/latest")
    assert (latest.version, latest.alias, latest.run_id, pinned) == ("2", None, run_id, f"models:/{name}/2")
    with pytest.raises(UserInputError, match=rf"cannot read the MLflow model 'models:/{name}/9'"):
        resolve_model(f"models:/{name}/9")


def test_write_model_sample_records_the_fit_and_the_registered_version(registered, spark, tmp_path):
    synth, _, run_id, name = registered
    uri = f"models:/{name}@champion"
    out = tmp_path / "from_champion"
    written = write_model_sample(uri, 300, str(out), seed=4, spark=spark)
    assert written.endswith(str(out)) and spark.read.format("delta").load(str(out)).count() == 300
    report = synth.privacy_report_
    expected = Provenance(epsilon=report.epsilon_spent, delta=1e-8, rho=report.rho_spent, engine="independent",
                          version=__version__, fit_id=report.fit_id, mlflow_run_id=run_id,
                          source_model=SourceModel(uri=uri, registered_model=name, version="1", alias="champion",
                                                   run_id=run_id))
    info = detail(spark, out)
    props = {k: v for k, v in info["properties"].items() if k.startswith("spark_synth.")}
    assert props == expected.to_properties()
    assert props["spark_synth.epsilon"] == repr(report.epsilon_spent) and props["spark_synth.delta"] == "1e-08"
    assert props["spark_synth.fit_id"] == report.fit_id and props["spark_synth.model_version"] == "1"
    assert props["spark_synth.mlflow_run_id"] == run_id  # the model's run: the state logged by log_synthesizer has none
    assert info["description"] == expected.comment() and f"registered model {name}, version 1" in info["description"]
    assert history(spark, out) == [(0, "CREATE TABLE AS SELECT", expected.user_metadata())]  # one commit
    meta = json.loads(expected.user_metadata())["spark_synth"]
    assert (meta["model_uri"], meta["registered_model"], meta["model_version"]) == (uri, name, "1")

    # the same rows as the batch path from that version with the same seed: only the write differs
    batch = sample_model(f"models:/{name}/1", 300, seed=4, spark=spark)
    assert sorted(map(repr, spark.read.format("delta").load(str(out)).collect())) == sorted(map(repr, batch.collect()))

    # a registered model serves conditioned rows too, on both paths, the same for the same seed
    where = "sex = 'Female' AND age < 30"
    shaped = write_model_sample(uri, 200, str(tmp_path / "shaped"), seed=5, spark=spark, conditions=where)
    rows = spark.read.format("delta").load(shaped).toPandas()
    assert len(rows) == 200 and (rows["sex"] == "Female").all() and (rows["age"] < 30).all()
    batch = sample_model(f"models:/{name}/1", 200, seed=5, spark=spark, conditions=where).toPandas()
    assert sorted(map(repr, rows.itertuples(index=False))) == sorted(map(repr, batch.itertuples(index=False)))


def test_refusals_leave_no_partial_output(registered, spark, tmp_path):
    _, _, _, name = registered
    out = tmp_path / "once"
    write_model_sample(f"models:/{name}/2", 50, str(out), seed=1, spark=spark)
    before = (detail(spark, out)["properties"], history(spark, out))
    with pytest.raises(OutputError, match="already exists"):  # mode error: refused before the model is loaded
        write_model_sample(f"models:/{name}/1", 80, str(out), seed=2, spark=spark)
    assert (detail(spark, out)["properties"], history(spark, out)) == before
    assert spark.read.format("delta").load(str(out)).count() == 50
    with pytest.raises(UserInputError, match="cannot read the MLflow model"):
        write_model_sample(f"models:/{name}/7", 10, str(tmp_path / "never"), spark=spark)
    with pytest.raises(UserInputError, match="cannot read the MLflow model"):
        write_model_sample(f"models:/{name}@no_such_alias", 10, str(tmp_path / "never"), spark=spark)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["once"]  # no output, no hidden staging left behind


def test_overwrite_replaces_the_model_provenance(registered, spark, tmp_path):
    _, _, _, name = registered
    out = tmp_path / "replaced"
    write_model_sample(f"models:/{name}@champion", 30, str(out), seed=1, spark=spark)
    write_model_sample(f"models:/{name}/2", 20, str(out), seed=1, overwrite=True, spark=spark)
    props = detail(spark, out)["properties"]
    assert props["spark_synth.model_version"] == "2" and "spark_synth.model_alias" not in props  # nothing stale
    assert [h[1] for h in history(spark, out)] == ["CREATE TABLE AS SELECT", "CREATE OR REPLACE TABLE AS SELECT"]
    assert spark.read.format("delta").load(str(out)).count() == 20


def test_a_runs_uri_records_the_uri_and_the_run(registered, spark, tmp_path):
    synth, _, run_id, _ = registered
    uri = f"runs:/{run_id}/model"
    out = tmp_path / "from_run"
    write_model_sample(uri, 40, str(out), seed=3, spark=spark)
    props = detail(spark, out)["properties"]
    assert props["spark_synth.model_uri"] == uri and props["spark_synth.mlflow_run_id"] == run_id
    assert props["spark_synth.fit_id"] == synth.privacy_report_.fit_id
    assert "spark_synth.registered_model" not in props and "spark_synth.model_version" not in props


def test_cli_sample_takes_a_model_uri(registered, spark, tmp_path, capsys):
    synth, _, run_id, name = registered
    out = tmp_path / "cli"
    code = main(["sample", "--model", f"models:/{name}@champion", "--rows", "25", "--output", str(out), "--seed", "5"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out)
    assert (summary["model_uri"], summary["registered_model"], summary["model_version"]) == \
        (f"models:/{name}@champion", name, "1")
    assert summary["fit_id"] == synth.privacy_report_.fit_id and summary["epsilon_spent"] == 0.0
    props = detail(spark, out)["properties"]
    assert props["spark_synth.model_version"] == "1" and props["spark_synth.mlflow_run_id"] == run_id
    assert props["spark_synth.model_uri"] == f"models:/{name}@champion"
    assert spark.read.format("delta").load(str(out)).count() == 25

    code = main(["sample", "--model", f"models:/{name}/9", "--rows", "5", "--output", str(tmp_path / "bad")])
    captured = capsys.readouterr()
    assert code == 2 and captured.err.startswith("spark-synth: error: cannot read the MLflow model") and not captured.out
    assert not (tmp_path / "bad").exists()
