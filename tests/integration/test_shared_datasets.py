"""The foundation issue's acceptance runs on the full shared datasets (skipped when absent)."""

import json

import pytest

from spark_synth.cli import main
from spark_synth.schema import load_schema
from tests.helpers import one_way_tvd

pytestmark = [pytest.mark.spark, pytest.mark.shared_data]


def _cli_run(shared_data, name: str, engine: str, rows: int, out, capsys) -> dict:
    """`spark-synth run` on a shared dataset at ε = 1, δ = 1e-9; the printed summary."""
    code = main(["run", "--engine", "independent", "--input", str(shared_data / f"{name}.csv"), "--schema", str(shared_data / f"{name}.schema.json"),
                 "--engine", engine, "--epsilon", "1", "--delta", "1e-9", "--rows", str(rows),
                 "--output", str(out), "--seed", "1", "--no-mlflow"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    return json.loads(captured.out)


@pytest.mark.parametrize("name", ["adult", "california_housing", "mushroom", "german_credit"])
def test_independent_run_on_shared_dataset(spark, shared_data, tmp_path, capsys, name):
    import pandas as pd

    out = tmp_path / "out.parquet"
    assert _cli_run(shared_data, name, "independent", 10000, out, capsys)["epsilon_spent"] <= 1.0
    schema = load_schema(shared_data / f"{name}.schema.json")
    synthetic = spark.read.parquet(str(out)).toPandas()
    assert len(synthetic) == 10000 and list(synthetic.columns) == list(schema.names)
    real = pd.read_csv(shared_data / f"{name}.csv", dtype=str, keep_default_na=False, na_values=[""])
    tvd = one_way_tvd(real, synthetic, schema)
    # The issue bounds adult at 0.03; the others (german_credit has 1,000 rows, so ε = 1 noise is large)
    # get a sanity bound that a decoding or mapping bug (TVD ≈ 0.5) would break.
    limit = 0.03 if name == "adult" else 0.2
    print(name, "mean 1-way TVD", sum(tvd.values()) / len(tvd))
    assert sum(tvd.values()) / len(tvd) <= limit, tvd


@pytest.mark.parametrize("name", ["adult", "california_housing", "mushroom", "german_credit"])
def test_splice_run_on_shared_dataset_with_defaults(spark, shared_data, tmp_path, capsys, name):
    out = tmp_path / "splice.parquet"
    summary = _cli_run(shared_data, name, "splice", 5000, out, capsys)
    assert summary["epsilon_spent"] <= 1.0 and summary["epsilon_spent"] == pytest.approx(1.0, rel=1e-9)
    schema = load_schema(shared_data / f"{name}.schema.json")
    synthetic = spark.read.parquet(str(out))
    assert synthetic.count() == 5000 and synthetic.columns == list(schema.names)


@pytest.mark.parametrize("name", ["california_housing", "mushroom", "german_credit"])
def test_fpt_run_on_shared_dataset_with_defaults(spark, shared_data, tmp_path, capsys, name):
    """FPT with its defaults end to end (adult, bank_marketing, credit_default and diabetes_readmission
    run in benchmarks/fpt_vs_peers.py and benchmarks/fpt_hierarchy.py, which take minutes each)."""
    out = tmp_path / "fpt.parquet"
    summary = _cli_run(shared_data, name, "fpt", 5000, out, capsys)
    assert summary["epsilon_spent"] == pytest.approx(1.0, rel=1e-9) and summary["measure_passes"] == 1
    schema = load_schema(shared_data / f"{name}.schema.json")
    synthetic = spark.read.parquet(str(out))
    assert synthetic.count() == 5000 and synthetic.columns == list(schema.names)
