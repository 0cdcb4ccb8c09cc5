"""`schema init` types a CSV (issue 46): from a user-given Spark DDL (`--types`), or by a DP pass
(`--dp-types`, charged like `--dp-bounds`); `--dp-bounds` types ISO dates and true/false too; and
the file's header says exactly what was read and what it cost."""

import datetime as dt
import json
import math
import uuid

import numpy as np
import pandas as pd
import pytest
import yaml

from spark_synth.cli import main
from spark_synth.measure.profile import ISO_DATE, KINDS, OTHER_NUMBER, OTHER_WHOLE, TEXT, TRUE_FALSE, ZERO_ONE, iso_days
from spark_synth.prepass import _decide_kinds
from spark_synth.track import BudgetLedger

DDL = "age INT, income DOUBLE, joined DATE, member BOOLEAN, city STRING"


def _cli(capsys, *args):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out.strip(), captured.err.strip()


def _table(n: int, seed: int = 46) -> pd.DataFrame:
    """A CSV-like table: an integer, a money column, a 0/1 flag, ISO dates, true/false, text."""
    rng = np.random.default_rng(seed)
    days = rng.integers(0, 3 * 365, n)
    return pd.DataFrame({
        "age": rng.integers(18, 91, n),
        "income": np.round(rng.lognormal(10, 0.6, n), 2),
        "churned": rng.choice([0, 1], n, p=[0.8, 0.2]),
        "joined": [(dt.date(2019, 1, 1) + dt.timedelta(days=int(d))).isoformat() for d in days],
        "member": rng.choice(["true", "false"], n),
        "city": rng.choice(["Oslo", "Rome", "Lima", "Pune"], n),
    })


def _csv(tmp_path, n: int, seed: int = 46):
    frame = _table(n, seed)
    path = tmp_path / "t.csv"
    frame.to_csv(path, index=False)
    return path, frame


# ---- pure: the kinds of a value and the decision (no Spark) ------------------------------------

def test_iso_days_reads_only_real_iso_dates():
    values = pd.Series(["2020-01-05", " 2020-1-5 ", "2020-02-30", "2020-02-29", "05/01/2020", "2020-01-05T10:00", 7])
    days = iso_days(values)
    assert days[:2].tolist() == [18266.0, 18266.0] and days[3] == 18321.0
    assert np.isnan(days[[2, 4, 5, 6]]).all()


@pytest.mark.parametrize("counts, expected", [
    ({ZERO_ONE: 3000, OTHER_WHOLE: 5}, ("integer", True)),
    ({ZERO_ONE: 100, OTHER_WHOLE: 2900}, ("integer", False)),
    ({OTHER_WHOLE: 1500, OTHER_NUMBER: 1500}, ("continuous", False)),
    ({ISO_DATE: 2900, TEXT: 100}, ("date", False)),
    ({TRUE_FALSE: 3000}, ("boolean", False)),
    ({TEXT: 3000, ISO_DATE: 200}, ("categorical", False)),
])
def test_the_type_decision_post_processes_noisy_kind_counts(counts, expected):
    rng = np.random.default_rng(0)
    sigma = 60.0
    for _ in range(20):  # noise of that σ on every count never flips these
        noisy = np.array([counts.get(k, 0) for k in range(len(KINDS))], dtype=float) + rng.normal(0, sigma, len(KINDS))
        assert _decide_kinds(noisy, sigma) == expected


# ---- --types: a Spark DDL ------------------------------------------------------------------------

@pytest.mark.spark
def test_types_ddl_drafts_a_csv_exactly_as_parquet_storage_types(spark, tmp_path, capsys):
    source, frame = _csv(tmp_path, 200)
    out = tmp_path / "t.yaml"
    code, _, stderr = _cli(capsys, "schema", "init", "--input", source, "--output", tmp_path / "none.yaml", "--no-mlflow")
    assert code == 0 and "a CSV declares no types" in stderr and "--types" in stderr and "--dp-types" in stderr
    code, stdout, stderr = _cli(capsys, "schema", "init", "--input", source, "--output", out, "--types", DDL,
                                "--no-mlflow")
    assert code == 0, stderr
    summary = json.loads(stdout)
    assert summary["types_from_ddl"] == ["age", "income", "joined", "member", "city"] and summary["dp_prepass"] is None
    drafted = yaml.safe_load(out.read_text())["columns"]
    assert drafted == [{"name": "age", "type": "integer", "min": "TODO", "max": "TODO"},
                       {"name": "income", "type": "continuous", "min": "TODO", "max": "TODO"},
                       {"name": "churned", "type": "TODO"},  # not in the DDL: text, as without --types
                       {"name": "joined", "type": "date", "min": "TODO", "max": "TODO"},
                       {"name": "member", "type": "boolean"},
                       {"name": "city", "type": "categorical", "categories": "TODO"}]
    assert summary["todo"] == ["age", "income", "churned", "joined", "city"]
    # the same table stored as Parquet with those types drafts the same columns
    typed = spark.createDataFrame(frame.drop(columns="churned").assign(
        joined=pd.to_datetime(frame["joined"]).dt.date, member=frame["member"] == "true"),
        "age int, income double, joined date, member boolean, city string")
    typed.write.parquet(str(tmp_path / "t.parquet"))
    assert _cli(capsys, "schema", "init", "--input", tmp_path / "t.parquet", "--output", tmp_path / "p.yaml",
                "--no-mlflow")[0] == 0
    assert yaml.safe_load((tmp_path / "p.yaml").read_text())["columns"] == [c for c in drafted if c["name"] != "churned"]
    text = out.read_text()
    assert "the types of 5 of its 6 columns (age, income, joined, member, city; the others are text" in " ".join(
        line.lstrip("# ") for line in text.splitlines())
    assert "VALUES" not in text and "dp_prepass" not in text
    assert "  # age: declared int (--types)\n" in text and "  # churned: declared as CSV text" in text
    # @FILE (with -- comments) reads the same DDL; NOT NULL is the user's public declaration
    ddl_file = tmp_path / "t.ddl"
    ddl_file.write_text("-- the table's public types\nage INT NOT NULL, income DOUBLE,\njoined DATE, member BOOLEAN,"
                        " city STRING, churned INT\n")
    code, stdout, stderr = _cli(capsys, "schema", "init", "--input", source, "--output", tmp_path / "f.yaml",
                                "--types", f"@{ddl_file}", "--no-mlflow")
    assert code == 0, stderr
    again = {c["name"]: c for c in yaml.safe_load((tmp_path / "f.yaml").read_text())["columns"]}
    assert again["age"]["nullable"] is False and again["churned"]["type"] == "integer"
    assert json.loads(stdout)["types_from_ddl"] == ["age", "income", "churned", "joined", "member", "city"]


@pytest.mark.spark
@pytest.mark.parametrize("types, words", [
    ("age INTT, city STRING", ["'--types'", "Spark could not parse it", "INTT"]),
    ("age INT,", ["'--types'", "Spark could not parse it", "PARSE_SYNTAX_ERROR"]),
    ("age INT, agee INT", ["'--types'", "['agee'] not in the CSV's header"]),
    ("AGE INT", ["'--types'", "'AGE' (the CSV has 'age')"]),
    ("age INT, age DOUBLE", ["'--types'", "['age'] listed more than once"]),
    ("age ARRAY<INT>", ["'--types'", "age array<int>"]),
    ("int", ["'--types'", "not a bare type"]),
    ("@/nonexistent/t.ddl", ["'--types'", "does not exist"]),
])
def test_bad_types_are_one_line_errors_naming_the_problem_and_nothing_is_written(spark, tmp_path, capsys, types, words):
    source, _ = _csv(tmp_path, 50)
    out = tmp_path / "t.yaml"
    code, stdout, stderr = _cli(capsys, "schema", "init", "--input", source, "--output", out, "--types", types,
                                "--no-mlflow")
    assert code == 2 and stdout == "" and "\n" not in stderr, stderr
    assert all(w in stderr for w in words), stderr
    assert not out.exists() and not list(tmp_path.glob(".t.yaml*"))


@pytest.mark.spark
def test_types_and_dp_types_are_refused_where_they_cannot_apply(spark, tmp_path, capsys):
    spark.createDataFrame(pd.DataFrame({"a": [1, 2]})).write.parquet(str(tmp_path / "t.parquet"))
    out = tmp_path / "t.yaml"
    code, _, stderr = _cli(capsys, "schema", "init", "--input", tmp_path / "t.parquet", "--output", out, "--types",
                           "a INT", "--no-mlflow")
    assert code == 2 and "'--types'" in stderr and "CSV input only" in stderr and not out.exists()
    code, _, stderr = _cli(capsys, "schema", "init", "--input", tmp_path / "t.parquet", "--output", out, "--dp-types",
                           "1", "--no-mlflow")
    assert code == 2 and "'--dp-types'" in stderr and "declared type" in stderr and not out.exists()
    source, _ = _csv(tmp_path, 50)
    code, _, stderr = _cli(capsys, "schema", "init", "--input", source, "--output", out, "--dp-types", "1",
                           "--dp-bounds", "1", "--no-mlflow")
    assert code == 2 and "'--dp-types'" in stderr and "--dp-bounds" in stderr and not out.exists()
    code, _, stderr = _cli(capsys, "schema", "init", "--input", source, "--output", out, "--dp-types", "-1",
                           "--no-mlflow")
    assert code == 2 and "'--dp-types'" in stderr and not out.exists()


# ---- --dp-types: a DP pass, charged ---------------------------------------------------------------

@pytest.mark.spark
def test_dp_types_types_a_csv_and_is_charged_like_dp_bounds(spark, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SPARK_SYNTH_LEDGER_PREFIX", f"test-{uuid.uuid4().hex[:8]}:")
    source, _ = _csv(tmp_path, 4000)
    out = tmp_path / "t.yaml"
    code, stdout, stderr = _cli(capsys, "schema", "init", "--input", source, "--output", out, "--dp-types", "0.5")
    assert code == 0, stderr
    summary = json.loads(stdout)
    columns = {c["name"]: c for c in yaml.safe_load(out.read_text())["columns"]}
    # 6 columns at ε = 0.5 (σ ≈ 68 per count on 4,000 rows): each decision is many σ from flipping
    assert columns == {
        "age": {"name": "age", "type": "integer", "min": "TODO", "max": "TODO"},
        "income": {"name": "income", "type": "continuous", "min": "TODO", "max": "TODO"},
        "churned": {"name": "churned", "type": "integer", "min": 0, "max": 1},
        "joined": {"name": "joined", "type": "date", "min": "TODO", "max": "TODO"},
        "member": {"name": "member", "type": "boolean"},
        "city": {"name": "city", "type": "categorical", "categories": "TODO"}}
    cost = summary["dp_prepass"]
    assert cost["method"] == "--dp-types" and cost["columns_read"] == list(columns) and cost["ledger"] is True
    assert cost["delta_approx"] == 0 and cost["delta"] == 1e-9 and 0 < cost["epsilon"] <= 0.5
    # charged where --dp-bounds is: the table's ledger, a `schema` entry keyed by the pre-pass id
    entries = BudgetLedger(str(source)).entries()
    assert [(e.kind, e.fit_id) for e in entries] == [("schema", cost["id"])]
    assert entries[0].rho == cost["rho"] and summary["ledger"]["cumulative_rho"] == cost["rho"]
    # the header says what was read and what it cost; the file's record loads back
    text = out.read_text()
    header = " ".join(line.lstrip("# ") for line in text.split("dp_prepass:")[0].splitlines())
    assert "never its values" not in header
    assert "(--dp-types 0.5), the VALUES of 6 columns: age, income, churned, joined, member, city" in header
    assert f"rho = {cost['rho']:.6g} (zCDP)" in header and f"epsilon = {cost['epsilon']:.6g}" in header
    assert f"charged to the budget ledger of '{source}'" in header
    assert "(nothing thresholded: fits using this file add no delta)" in header
    assert "  # churned: DP type decision: integer; a 0/1 column" in text


# ---- --dp-bounds: dates and booleans of a CSV, then a run on the CSV itself -------------------------

@pytest.mark.spark
def test_dp_bounds_types_iso_dates_and_true_false_and_run_reads_them_from_the_csv(spark, tmp_path, capsys):
    source, frame = _csv(tmp_path, 4000, seed=7)
    out = tmp_path / "t.yaml"
    code, stdout, stderr = _cli(capsys, "schema", "init", "--input", source, "--output", out, "--dp-bounds", "1",
                                "--no-mlflow")
    assert code == 0, stderr
    summary = json.loads(stdout)
    assert summary["todo"] == [] and summary["ledger"] is None
    columns = {c["name"]: c for c in yaml.safe_load(out.read_text())["columns"]}
    assert columns["member"] == {"name": "member", "type": "boolean"}
    assert columns["churned"] == {"name": "churned", "type": "integer", "min": 0, "max": 1}
    joined = columns["joined"]  # its bounds: the DP quantiles of a declared date column (not this test's subject)
    assert joined["type"] == "date" and "1900-01-01" <= joined["min"] < joined["max"] <= "2101-01-01"
    assert "DP type decision: date (ISO dates YYYY-MM-DD); DP bounds" in out.read_text()
    assert columns["city"]["categories"] == ["Lima", "Oslo", "Pune", "Rome"]
    header = " ".join(line.lstrip("# ") for line in out.read_text().split("dp_prepass:")[0].splitlines())
    assert "never its values" not in header and "(--dp-bounds 1), the VALUES of 6 columns" in header
    assert "not charged to any ledger (MLflow was off)" in header
    cost = summary["dp_prepass"]
    assert f"delta = {cost['delta']:.6g})-DP" in header and f"{cost['delta_approx']:.6g} (thresholds" in header
    # the CSV's text dates and true/false values are read as the schema's types by the fit
    code, stdout, stderr = _cli(capsys, "run", "--engine", "independent", "--input", source, "--schema", out, "--epsilon", "2", "--delta", "1e-9",
                                "--rows", "300", "--output", tmp_path / "o.parquet", "--seed", "3", "--no-mlflow")
    assert code == 0, stderr
    rows = spark.read.parquet(str(tmp_path / "o.parquet")).toPandas()
    days = pd.to_datetime(rows["joined"].dropna())
    assert len(days) > 250 and days.min() >= pd.Timestamp(joined["min"]) and days.max() <= pd.Timestamp(joined["max"])
    share = rows["member"].dropna().astype(bool).mean()
    assert len(rows["member"].dropna()) > 250 and 0.35 < share < 0.65  # half true, as in the CSV, not all null
    assert math.isclose(frame["member"].eq("true").mean(), 0.5, abs_tol=0.05)
