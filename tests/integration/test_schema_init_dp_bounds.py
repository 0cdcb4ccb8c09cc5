"""`schema init --dp-bounds` on Spark (issue 45): usable bounds at a moderate ε, and bounds to check
by hand named in the JSON line, on stderr and in the drafted YAML."""

import json

import numpy as np
import pandas as pd
import pytest
import yaml

from spark_synth.cli import main

pytestmark = pytest.mark.spark


def test_dp_bounds_of_a_0_1_column_and_a_far_off_block_are_usable_and_flagged(spark, tmp_path, capsys):
    rng = np.random.default_rng(45)
    n = 7000
    far = np.concatenate([rng.integers(1, 100, n - 1500), np.full(1500, 10**9)])  # a block 2^23 times higher
    pd.DataFrame({"flag": rng.choice([0, 1], n, p=[0.78, 0.22]), "far": rng.permutation(far)}).to_csv(
        tmp_path / "t.csv", index=False)
    out = tmp_path / "t.yaml"
    code = main(["schema", "init", "--input", str(tmp_path / "t.csv"), "--output", str(out), "--dp-bounds", "0.5",
                 "--no-mlflow"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out.strip())
    columns = {c["name"]: c for c in yaml.safe_load(out.read_text())["columns"]}
    # two columns at ε = 0.5: a spurious range (≤ 1e-6 each) or a wrong type (~1e-9) is all that could break these
    assert columns["flag"] == {"name": "flag", "type": "integer", "min": 0, "max": 1}
    assert columns["far"]["type"] == "integer" and columns["far"]["max"] >= 10**9
    (flag,) = [w for w in summary["warnings"] if w.startswith("column 'far': 'max: ")]
    assert "powers of two away" in flag and "by hand" in flag
    assert f"spark-synth: {flag}" in captured.err.splitlines()
    assert f"  # CHECK: {flag}\n" in out.read_text() and "a 0/1 column" in out.read_text()
    assert summary["dp_prepass"]["epsilon"] <= 0.5 and summary["todo"] == []


def test_the_header_of_a_dp_bounds_draft_says_what_was_read_and_what_it_cost(spark, tmp_path, capsys):
    """Issue 46: the header said "never its values" above a DP pre-pass over the values."""
    rng = np.random.default_rng(46)
    pd.DataFrame({"n": rng.integers(0, 50, 3000), "c": rng.choice(["a", "b"], 3000)}).to_csv(tmp_path / "t.csv",
                                                                                             index=False)
    out = tmp_path / "t.yaml"
    code = main(["schema", "init", "--input", str(tmp_path / "t.csv"), "--output", str(out), "--dp-bounds", "0.5",
                 "--no-mlflow"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    cost = json.loads(captured.out.strip())["dp_prepass"]
    text = out.read_text()
    header = " ".join(line.lstrip("# ") for line in text.split("dp_prepass:")[0].splitlines())
    assert "never its values" not in header
    assert "(--dp-bounds 0.5), the VALUES of 2 columns: n, c. Only DP outputs of those values are in this file" in header
    assert (f"Cost: rho = {cost['rho']:.6g} (zCDP), i.e. (epsilon = {cost['epsilon']:.6g}, delta = "
            f"{cost['delta']:.6g})-DP, delta = {cost['delta_conversion']:.6g} (conversion) + "
            f"{cost['delta_approx']:.6g} (thresholds") in header
    assert "not charged to any ledger (MLflow was off)" in header
    record = yaml.safe_load(text)["dp_prepass"]
    assert record["method"] == "--dp-bounds" and record["columns_read"] == ["n", "c"] and record["ledger"] is False
