"""Every notebook runs locally, as it is, through the dbutils stand-in, on the shared session."""

from __future__ import annotations

import uuid
from pathlib import Path

import mlflow
import pytest

from spark_synth.engines import ENGINES
from tests.notebook_support import run_notebook

pytestmark = pytest.mark.spark
NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


@pytest.fixture(scope="module")
def source_table(spark, adult_sample_paths):
    """The bundled sample as a catalog Delta table (typed columns, as a real source would have)."""
    data, schema = adult_sample_paths
    name = f"default.nb_adult_{uuid.uuid4().hex[:6]}"
    spark.read.csv(data, header=True, inferSchema=True).write.format("delta").saveAsTable(name)
    yield name, schema
    spark.sql(f"DROP TABLE IF EXISTS {name}")


def test_quickstart_table_in_synthetic_delta_table_out(spark, source_table, tmp_path):
    table, schema = source_table
    output = f"default.nb_synthetic_{uuid.uuid4().hex[:6]}"
    report_dir = tmp_path / "report"
    ns = run_notebook(NOTEBOOKS / "quickstart.py", spark, {
        "table": table, "schema": schema, "output_table": output, "epsilon": "0.7", "delta": "1e-8", "rows": "1500",
        "report_dir": str(report_dir),
    })
    assert ns["synth"].privacy_report_.epsilon_spent == pytest.approx(0.7, rel=1e-9)
    written = spark.table(output)
    assert written.count() == 1500 and written.columns == list(ns["schema"].names)
    detail = spark.sql(f"DESCRIBE DETAIL {output}").first()
    assert detail["format"] == "delta"
    assert detail["properties"]["spark_synth.fit_id"] == ns["synth"].privacy_report_.fit_id  # the fit's provenance
    assert len(ns["_displayed"][-1]) == 20
    assert sorted(ns["dbutils"].widgets.declared["engine"]["choices"]) == sorted(ENGINES)
    # the evaluation report: written, shown, and the fit only saw the train part
    assert (report_dir / "metrics.json").is_file() and (report_dir / "report.html").is_file()
    assert len(ns["_html"]) == 1 and "<img" in ns["_html"][0]
    assert ns["train"].count() + ns["holdout"].count() == spark.table(table).count()
    assert ns["evaluation"].metrics["marginals"]["1way"]["tvd_mean"] < 0.2
    spark.sql(f"DROP TABLE {output}")


@pytest.mark.parametrize("engine", sorted(p.stem for p in (NOTEBOOKS / "engines").glob("*.py")))
def test_engine_notebook(engine, spark, source_table, tmp_path):
    assert engine in ENGINES
    table, schema = source_table
    output = str(tmp_path / f"{engine}_synthetic")
    ns = run_notebook(NOTEBOOKS / "engines" / f"{engine}.py", spark, {
        "table": table, "schema": schema, "output_table": output, "rows": "800", "epsilon": "2",
    })
    assert ns["synth"].engine == engine and ns["synth"].privacy_report_.epsilon_spent == pytest.approx(2.0, rel=1e-9)
    assert spark.read.format("delta").load(output).count() == 800
    report = ns["synth"].privacy_report_
    report_table = ns["_displayed"][0]
    assert len(report_table) == len(report.measurements) and (report_table["sigma"] > 0).all()
    if report.selections:  # SPLICE's pair anchors: each chosen by the exponential mechanism, shown in a second table
        selections = ns["_displayed"][1]
        assert len(selections) == len(report.selections) and (selections["scale"] > 0).all()
    assert len(report.measurements) + len(report.selections) == len(report.entries)


def test_release_notebook_fit_register_sample(spark, spark_home, source_table, tmp_path, monkeypatch):
    table, schema = source_table
    monkeypatch.setenv("SPARK_SYNTH_LEDGER_PREFIX", f"nb-{uuid.uuid4().hex[:6]}:")
    name = f"nb_release_{uuid.uuid4().hex[:6]}"
    output = str(tmp_path / "released_sample")
    ns = run_notebook(NOTEBOOKS / "release.py", spark, {
        "table": table, "schema": schema, "model_name": name, "budget_cap": "3", "rows": "2500", "output_table": output,
    })
    summary = ns["summary"]
    assert summary["model_uri"] == f"models:/{name}/1" and summary["cumulative"]["cap_epsilon"] == 3.0
    assert summary["cumulative"]["epsilon"] == pytest.approx(1.0, rel=1e-9) and summary["source_table"] == table
    version = mlflow.MlflowClient().get_model_version(name, "1")
    assert version.tags["spark_synth.neighbouring_relation"] == "add/remove one row"
    ledger_rows, predicted = ns["_displayed"][0], ns["_displayed"][1]
    # charged once, as the fit was made; the release of the same fit adds an entry, not a spend
    assert list(ledger_rows["kind"]) == ["fit", "release"] and list(ledger_rows["model"]) == ["", name]
    assert set(ledger_rows["fit_id"]) == {ns["synth"].privacy_report_.fit_id}
    assert len(predicted) == 10 and list(predicted.columns) == list(spark.table(table).columns)
    assert spark.read.format("delta").load(output).count() == 2500
    # the sample carries the fit's provenance and the registered version it came from
    props = spark.sql(f"DESCRIBE DETAIL delta.`{output}`").first()["properties"]
    report = ns["synth"].privacy_report_
    assert props["spark_synth.fit_id"] == report.fit_id and props["spark_synth.epsilon"] == repr(report.epsilon_spent)
    assert (props["spark_synth.model_uri"], props["spark_synth.registered_model"], props["spark_synth.model_version"]) \
        == (f"models:/{name}/1", name, "1")
    assert props["spark_synth.mlflow_run_id"] == ns["run"].info.run_id
    provenance_table = ns["_displayed"][2]
    assert dict(zip(provenance_table["property"], provenance_table["value"]))["spark_synth.model_version"] == "1"
