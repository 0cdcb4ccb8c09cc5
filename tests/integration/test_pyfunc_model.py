"""A fitted synthesizer as an MLflow pyfunc model: metadata, signature, predict, the batch path,
and loading a registered version in a fresh process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from pathlib import Path

import mlflow
import pandas as pd
import pytest

from spark_synth import ParameterError, Synthesizer, load_schema
from spark_synth.io import read_input
from spark_synth.schema.spark_types import output_struct
from spark_synth.track import load_synthesizer, log_synthesizer, mlflow_run, release, sample_model

pytestmark = pytest.mark.spark


@pytest.fixture(scope="module")
def logged(spark, spark_home, adult_sample_paths):
    data, schema = adult_sample_paths
    synth = Synthesizer("independent", epsilon=0.8, delta=1e-8).fit(read_input(spark, data), load_schema(schema))
    with mlflow_run("pyfunc-test") as run:
        info = log_synthesizer(synth, source=data)
    return synth, info, run.info.run_id


def test_metadata_states_the_privacy_guarantee(logged):
    synth, info, _ = logged
    meta = mlflow.pyfunc.load_model(info.model_uri).metadata.metadata["spark_synth"]
    privacy, report = meta["privacy"], synth.privacy_report_
    assert privacy["epsilon"] == report.epsilon_spent == pytest.approx(0.8, rel=1e-9)
    assert (privacy["delta"], privacy["rho"]) == (1e-8, report.rho_spent)
    assert privacy["neighbouring_relation"] == "add/remove one row"
    assert privacy["sampling_spends_budget"] is False and "spends no privacy budget" in privacy["sampling_note"]
    assert "schema" in privacy["not_covered"] and "every row sampled" in privacy["covers"]
    assert meta["engine"] == "independent" and meta["engine_config"] == {
        "one_way_fine_share": 0.5, "one_way_sigmas_per_range": 3.0, "null_floor": 2.0}  # its defaults
    assert meta["schema"] == synth.schema_.to_dict()
    assert meta["source_table"].endswith("adult_sample.csv")


def test_model_holds_only_the_saved_synthesizer_state(logged, tmp_path):
    synth, info, _ = logged
    local = mlflow.artifacts.download_artifacts(info.model_uri, dst_path=str(tmp_path))
    files = sorted(str(p.relative_to(local)) for p in Path(local).rglob("*") if p.is_file())
    data_files = [f for f in files if f.startswith("artifacts/")]
    assert data_files == ["artifacts/synthesizer/synthesizer.json"]
    saved = json.loads((Path(local) / data_files[0]).read_text())
    assert saved == json.loads(json.dumps(synth.to_dict()))


def test_signature_rows_and_seed_in_schema_columns_out(logged):
    synth, info, _ = logged
    signature = mlflow.models.get_model_info(info.model_uri).signature
    inputs = {c["name"]: c for c in signature.inputs.to_dict()}
    assert inputs["rows"]["type"] == "long" and inputs["rows"].get("required", True) is True
    assert inputs["seed"]["type"] == "long" and inputs["seed"]["required"] is False
    assert inputs["conditions"]["type"] == inputs["rows_per"]["type"] == "string"
    assert inputs["conditions"]["required"] is inputs["rows_per"]["required"] is False
    outputs = {c["name"]: c["type"] for c in signature.outputs.to_dict()}
    assert outputs == {f.name: {"LongType()": "long", "StringType()": "string", "DoubleType()": "double"}[repr(f.dataType)]
                       for f in output_struct(synth.schema_).fields}


def test_predict_rows_seed_reproducible_and_typed(logged):
    synth, info, _ = logged
    model = mlflow.pyfunc.load_model(info.model_uri)
    a = model.predict({"rows": 400, "seed": 5})
    b = model.predict(pd.DataFrame({"rows": [400], "seed": [5]}))
    c = model.predict({"rows": 400, "seed": 6})
    assert len(a) == 400 and list(a.columns) == list(synth.schema_.names)
    pd.testing.assert_frame_equal(a, b)
    assert not a.equals(c)
    assert str(a["age"].dtype) == "Int64" and a["sex"].dropna().isin(["Female", "Male"]).all()
    assert a["age"].dropna().between(17, 90).all()
    both = model.predict(pd.DataFrame({"rows": [3, 4], "seed": [1, 2]}))
    assert len(both) == 7
    assert len(model.predict({"rows": 10})) == 10  # seed optional
    with pytest.raises(Exception, match="rows"):
        model.predict({"rows": 0})


def test_predict_takes_conditions_and_rows_per_per_request(logged):
    synth, info, _ = logged
    model = mlflow.pyfunc.load_model(info.model_uri)  # MLflow checks the input against the signature
    where = "sex = 'Female' AND age BETWEEN 30 AND 39"
    a = model.predict(pd.DataFrame({"rows": [300, 200], "seed": [1, 2], "conditions": [where, None],
                                    "rows_per": [None, "race"]}))
    first, second = a.iloc[:300], a.iloc[300:]
    assert (first["sex"] == "Female").all() and first["age"].between(30, 39).all()
    assert second["sex"].nunique() == 2  # the second request has no condition
    counts = second["race"].value_counts()
    shares = synth.model_.probabilities[synth.schema_.names.index("race")]  # independent: the race marginal
    labels = list(synth.schema_.columns[synth.schema_.names.index("race")].categories)
    expected = {label: 200 * shares[i] / shares[:len(labels)].sum() for i, label in enumerate(labels)}
    assert all(abs(counts.get(label, 0) - value) < 1 for label, value in expected.items())  # rounded exactly
    again = model.predict({"rows": 300, "seed": 1, "conditions": where})
    pd.testing.assert_frame_equal(again, first.reset_index(drop=True))
    with pytest.raises(Exception, match="did you mean 'Female'"):
        model.predict({"rows": 10, "conditions": "sex = 'female'"})


def test_batch_path_samples_on_spark_without_a_udf(logged, spark):
    synth, info, _ = logged
    df = sample_model(info.model_uri, 5000, seed=3, spark=spark, partitions=3)
    assert df.rdd.getNumPartitions() == 3 and df.count() == 5000
    assert df.schema == synth.sample(10, seed=0, spark=spark).schema
    again = load_synthesizer(info.model_uri).sample(5000, seed=3, spark=spark, partitions=3)
    pd.testing.assert_frame_equal(df.toPandas(), again.toPandas())  # same seed and partitions: same rows


def test_log_synthesizer_needs_an_active_run(logged):
    synth, _, _ = logged
    from spark_synth.track import log_synthesizer_model

    with pytest.raises(Exception, match="no active MLflow run"):
        log_synthesizer_model(synth)


def test_registered_model_loads_in_a_fresh_process(logged, spark_home):
    """`release` then `mlflow.pyfunc.load_model("models:/…")` in a new Python process."""
    synth, _, run_id = logged
    name = f"adult_synth_{uuid.uuid4().hex[:6]}"
    summary = release(run_id, name, ledger_prefix=f"test-{uuid.uuid4().hex[:6]}:")
    assert summary["model_uri"] == f"models:/{name}/1"
    code = (
        "import json, mlflow\n"
        f"m = mlflow.pyfunc.load_model({summary['model_uri']!r})\n"
        "df = m.predict({'rows': 250, 'seed': 1})\n"
        "old = m.predict({'rows': 50, 'seed': 1, 'conditions': 'age >= 70'})\n"
        "assert len(old) == 50 and (old['age'] >= 70).all(), old['age'].min()\n"
        "print(json.dumps({'n': len(df), 'dtypes': {c: str(t) for c, t in df.dtypes.items()},"
        " 'eps': m.metadata.metadata['spark_synth']['privacy']['epsilon'],"
        " 'pyspark': __import__('sys').modules.get('pyspark') is not None}))\n"
    )
    env = {**os.environ, "MLFLOW_TRACKING_URI": f"sqlite:///{spark_home / 'mlflow.db'}"}
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=180, cwd="/")
    assert done.returncode == 0, done.stderr[-3000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["n"] == 250 and result["eps"] == synth.privacy_report_.epsilon_spent
    expected = {c.name: ("object" if (c.type.is_discrete and c.category_kind == "string") else
                         "Int64" if output_struct(synth.schema_)[c.name].dataType.typeName() == "long" else "float64")
                for c in synth.schema_}
    assert result["dtypes"] == expected
