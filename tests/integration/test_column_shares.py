"""Outputs that never hide a failure (issue 45, item 5): what a model writes, column by column, is
said before a row is written — ``null_share`` in the JSON line and ``column_shares.json`` in MLflow —
a column that would come out (almost) all null is refused, and one that would come out constant at
the ``clip`` substitute is warned about loudly. The refusals' exact messages are in
``test_bad_inputs.py``; here: the ledger keeps a refused fit's charge, the warnings reach stderr, the
JSON line and MLflow, and the shares follow the model.
"""

from __future__ import annotations

import json

import mlflow
import numpy as np
import pytest

from spark_synth.cli import main
from spark_synth.engines import FittedModel
from spark_synth.errors import DataValidationError
from spark_synth.sample.column_shares import CHECK_ROWS, check, column_shares
from spark_synth.schema import schema_from_dict

pytestmark = pytest.mark.spark

SCHEMA = {"columns": [{"name": "age", "type": "integer", "min": 0, "max": 99},
                      {"name": "smoker", "type": "integer", "min": 0, "max": 1},
                      {"name": "colour", "type": "categorical", "categories": ["red", "green"]}]}


def _inputs(tmp_path, nullable_smoker: bool):
    schema = json.loads(json.dumps(SCHEMA))
    schema["columns"][1]["nullable"] = nullable_smoker
    rows = "".join(f"{20 + i % 60},{'yes' if i % 3 else 'no'},{'red' if i % 4 else ''}\n" for i in range(6000))
    data, schema_file = tmp_path / "smokers.csv", tmp_path / "smokers.schema.json"
    data.write_text("age,smoker,colour\n" + rows)
    schema_file.write_text(json.dumps(schema))
    return str(data), str(schema_file)


def _run(capsys, data, schema, output, *flags):
    code = main(["run", "--engine", "independent", "--input", data, "--schema", schema, "--epsilon", "1", "--delta", "1e-9", "--rows", "200",
                 "--output", str(output), *flags])
    captured = capsys.readouterr()
    return code, captured.out, captured.err.splitlines()


def test_a_column_read_as_all_null_is_refused_and_its_fit_stays_charged(spark, tmp_path, capsys):
    data, schema = _inputs(tmp_path, nullable_smoker=True)
    code, out, err = _run(capsys, data, schema, tmp_path / "out.parquet")
    assert code == 2 and out == "", err
    assert "column(s) 'smoker' " in err[-1] and "% null" in err[-1] and not (tmp_path / "out.parquet").exists()
    assert main(["budget", "--source-table", data]) == 0
    ledger = json.loads(capsys.readouterr().out)
    assert ledger["cumulative"]["fits"] == 1 and ledger["cumulative"]["epsilon"] == pytest.approx(1.0), ledger


def test_a_column_read_as_all_substitute_is_warned_everywhere(spark, tmp_path, capsys):
    data, schema = _inputs(tmp_path, nullable_smoker=False)
    code, out, err = _run(capsys, data, schema, tmp_path / "out.parquet")
    assert code == 0, err
    summary = json.loads(out)
    warnings = [line for line in err if line.startswith("spark-synth: WARNING: column 'smoker'")]
    assert len(warnings) == 1 and "in its lowest range (from its lower bound 0)" in warnings[0], err
    assert summary["warnings"] == [warnings[0].removeprefix("spark-synth: WARNING: ")]
    # a quarter of colour is empty in the source; age never is; smoker is not nullable
    assert set(summary["null_share"]) == {"age", "colour"} and summary["null_share"]["age"] < 0.02
    assert 0.15 < summary["null_share"]["colour"] < 0.35, summary["null_share"]
    run = mlflow.MlflowClient().get_run(summary["mlflow_run_id"])
    assert run.data.tags["spark_synth.warnings"] == "1"
    logged = mlflow.artifacts.load_dict(f"{run.info.artifact_uri}/column_shares.json")
    assert logged["substitute_share"]["smoker"] >= 0.99 and set(logged["substitute_share"]) == {"smoker"}
    assert (logged["null_share"], logged["warnings"]) == (summary["null_share"], summary["warnings"])
    synthetic = spark.read.parquet(str(tmp_path / "out.parquet")).toPandas()
    assert (synthetic["smoker"] == 0).mean() >= 0.95  # what the warning said


class _FixedModel(FittedModel):
    """A model that writes one fixed code matrix (the shares' arithmetic, nothing else)."""

    engine = "fixed"

    def __init__(self, codes):
        self.codes = np.asarray(codes)

    def sample_codes(self, n_rows, rng):
        return self.codes[rng.integers(0, len(self.codes), n_rows)]

    def to_state(self):
        return {}

    @classmethod
    def from_state(cls, state, schema):
        return cls([])


def test_the_shares_are_read_off_the_model_with_a_fixed_seed():
    schema = schema_from_dict(json.loads(json.dumps(SCHEMA)))
    null_age, null_smoker, null_colour = schema["age"].null_code, schema["smoker"].null_code, schema["colour"].null_code
    rows = [[3, null_smoker, 0]] * 995 + [[null_age, 1, null_colour]] * 5  # smoker 99.5% null, colour 0.5%
    model = _FixedModel(rows)
    shares = column_shares(model, schema)
    assert shares == column_shares(model, schema)  # the same model: the same shares
    assert shares.null["smoker"] == pytest.approx(0.995, abs=4 / np.sqrt(CHECK_ROWS) * 0.1)
    assert shares.null["colour"] == pytest.approx(0.005, abs=0.004) and shares.substitute == {}
    with pytest.raises(DataValidationError, match=r"'smoker' \d+% null \(integer in \[0, 1\]\)"):
        check(shares, schema)
    mostly = column_shares(_FixedModel([[3, null_smoker, 0]] * 6 + [[3, 1, 0]] * 4), schema)
    (warning,) = check(mostly, schema)
    assert warning.startswith("column 'smoker': 6") and "of the synthetic values are null" in warning
