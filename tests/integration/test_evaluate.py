"""Evaluation on Spark: the fair split, known-answer metrics end to end, the CLI, run --evaluate, MLflow."""

import json
import re
import uuid

import mlflow
import numpy as np
import pandas as pd
import pytest

from spark_synth.cli import main
from spark_synth.evaluate import evaluate, hash_sample, train_holdout_split
from spark_synth.track import release
from tests.helpers import error_line, tiny_schema

pytestmark = pytest.mark.spark


def _frame(n=2000, seed=0):
    """colour drives size, age and score (every pair associated), some nulls."""
    rng = np.random.default_rng(seed)
    k = rng.integers(0, 3, n)
    colour = np.array(["red", "green", "blue"], dtype=object)[k]
    colour[rng.random(n) < 0.05] = None
    return pd.DataFrame({
        "colour": colour,
        "size": (k + 1).astype("int64"),
        "age": np.clip(3 * k + rng.integers(0, 2, n), 0, 9).astype("int64"),
        "score": np.clip(0.3 * k + 0.1 * rng.random(n), 0, 1),
    })


@pytest.fixture(scope="module")
def tables(spark):
    frame = _frame()
    df = spark.createDataFrame(frame).repartition(3).cache()
    train, holdout = train_holdout_split(df, 0.25, seed=0)
    return frame, df, train.cache(), holdout.cache()


def test_split_is_deterministic_disjoint_and_complete(spark, tables):
    _, df, train, holdout = tables
    n, n_train, n_holdout = df.count(), train.count(), holdout.count()
    assert n_train + n_holdout == n and 0.2 < n_holdout / n < 0.3
    again_train, _ = train_holdout_split(df.repartition(5), 0.25, seed=0)  # other partitioning, same split
    key = ["colour", "size", "age", "score"]
    assert sorted(map(tuple, again_train.toPandas()[key].astype(str).values)) == sorted(map(tuple, train.toPandas()[key].astype(str).values))
    assert train.join(holdout, on=["size", "age", "score"], how="inner").count() == 0
    other, _ = train_holdout_split(df, 0.25, seed=1)
    assert other.exceptAll(train).count() > 0


def test_hash_sample_is_bounded_and_content_keyed(spark, tables):
    _, df, _, _ = tables
    a = hash_sample(df, 100, seed=3)
    b = hash_sample(df.repartition(7), 100, seed=3)
    assert len(a) == 100 and a.astype(str).equals(b.astype(str))


def test_hash_sample_reads_timestamps_as_utc_seconds_whatever_the_session_zone(spark):
    import datetime as dt

    at = dt.datetime(2020, 3, 8, 7, 30, tzinfo=dt.timezone.utc)  # 02:30 in New York is skipped that night
    df = spark.createDataFrame([(1, at), (2, None)], "id int, at timestamp")
    zone = spark.conf.get("spark.sql.session.timeZone")
    try:
        samples = {}
        for name in ("UTC", "America/New_York"):
            spark.conf.set("spark.sql.session.timeZone", name)
            samples[name] = hash_sample(df, 5, seed=0).sort_values("id")["at"].tolist()
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    assert samples["UTC"][0] == samples["America/New_York"][0] == at.timestamp() and np.isnan(samples["UTC"][1])


def test_identical_tables_give_zero_distances_and_tstr_equals_trtr(spark, tables):
    _, _, train, holdout = tables
    ev = evaluate(train, train, tiny_schema(), target="colour", holdout=holdout, progress=False)
    m = ev.metrics
    assert "NOT PRIVATE" in m["not_private"]
    for k in ("1way", "2way", "3way"):
        assert m["marginals"][k]["tvd_max"] == 0.0
    assert m["distance"]["sliced_w1"] == 0.0 and m["distance"]["mmd"] == 0.0
    assert m["association"]["abs_diff_max"] == 0.0
    for scores in m["utility"]["learners"].values():
        assert scores["tstr"] == scores["trtr"]
    assert m["utility"]["best"]["trtr"]["auroc"] > 0.9
    assert m["privacy_proxies"]["dcr_train_median"] == 0.0 and m["privacy_proxies"]["share_closer_to_train"] == 1.0
    assert m["privacy_proxies"]["membership_auc"] > 0.9


def test_column_shuffled_copy_keeps_one_way_and_breaks_associations(spark, tables):
    frame, _, train, holdout = tables
    train_pd = train.toPandas()
    rng = np.random.default_rng(4)
    shuffled = pd.DataFrame({c: train_pd[c].to_numpy()[rng.permutation(len(train_pd))] for c in train_pd.columns})
    ev = evaluate(train, spark.createDataFrame(shuffled, schema=train.schema), tiny_schema(), target="colour",
                  holdout=holdout, progress=False, table="toy")
    m = ev.metrics
    assert m["table"] == "toy"
    # a column-shuffled copy IS a draw of the independent reference: it scores like it
    independent = m["marginals"]["baselines"]["independent"]
    assert m["marginals"]["2way"]["tvd_mean"] == pytest.approx(independent["2way"]["tvd_mean"], abs=0.03)
    assert m["utility"]["best"]["independent"]["auroc"] < m["utility"]["best"]["trtr"]["auroc"] - 0.1
    assert m["marginals"]["1way"]["tvd_max"] == pytest.approx(0.0, abs=1e-12)
    assert m["marginals"]["2way"]["tvd_mean"] > 0.2
    assert m["association"]["abs_diff_mean"] > 0.5
    assert m["utility"]["best"]["tstr"]["auroc"] < m["utility"]["best"]["trtr"]["auroc"] - 0.2
    assert m["distance"]["sliced_w1"] > 0.01 and m["distance"]["mmd"] > 0.05


def _cli(capsys, *args):
    code = main(list(args))
    captured = capsys.readouterr()
    return code, captured.out.strip(), captured.err.strip()


def test_cli_evaluate_writes_report_and_logs_mlflow(spark, spark_home, adult_sample_paths, tmp_path, capsys):
    data, schema = adult_sample_paths
    synthetic = str(tmp_path / "syn.parquet")
    code, out, err = _cli(capsys, "fit", "--engine", "independent", "--input", data, "--schema", schema, "--epsilon", "1", "--delta", "1e-9",
                          "--model", str(tmp_path / "model"), "--no-mlflow")
    assert code == 0, err
    code, out, err = _cli(capsys, "sample", "--model", str(tmp_path / "model"), "--rows", "2000", "--output", synthetic, "--seed", "2")
    assert code == 0, err
    target = tmp_path / "eval"
    code, out, err = _cli(capsys, "evaluate", "--real", data, "--synthetic", synthetic, "--schema", schema,
                          "--out", str(target), "--privacy-report", str(tmp_path / "model"))
    assert code == 0, err
    summary = json.loads(out)
    assert "evaluate [1/9]" in err  # progress lines
    metrics = json.loads((target / "metrics.json").read_text())
    assert metrics["utility"]["target"] == "income" and 0 <= metrics["marginals"]["1way"]["tvd_mean"] < 0.1
    assert metrics["privacy_budget"]["epsilon_spent"] == pytest.approx(1.0)
    html = (target / "report.html").read_text()
    assert metrics["table"] == "adult_sample" and "<title>adult_sample" in html  # named by the --real file
    assert html.count("<img") >= 2 and "NOT PRIVATE" in html and '<section id="budget">' in html
    assert html.index('id="verdict"') < html.index('id="columns"') < html.index('id="budget"')
    # the baselines: the real hold-out (fresh rows score about 0.5) and the independent reference
    proxies, base = metrics["privacy_proxies"], metrics["marginals"]["baselines"]
    assert 0.3 < proxies["identification_risk_holdout"] < 0.7 and 0 <= proxies["identification_risk_independent"] <= 1
    assert 0 < base["holdout"]["2way"]["tvd_mean"] < 0.3 and base["independent"]["rows"] == metrics["rows"]["synthetic"]
    assert metrics["utility"]["best"]["independent"]["auroc"] < metrics["utility"]["best"]["trtr"]["auroc"] - 0.1
    assert not re.search(r"(src|href)=\"https?:", html)  # self-contained
    client = mlflow.MlflowClient()
    run = client.get_run(summary["mlflow_run_id"])
    assert run.data.metrics["eval_marginals.1way.tvd_mean"] == pytest.approx(metrics["marginals"]["1way"]["tvd_mean"])
    assert {a.path for a in client.list_artifacts(run.info.run_id, "evaluation")} == {"evaluation/metrics.json", "evaluation/report.html"}
    # refuses to overwrite, and bad input is one line naming the parameter
    code, out, err = _cli(capsys, "evaluate", "--real", data, "--synthetic", synthetic, "--schema", schema, "--out", str(target))
    assert code == 2 and "already holds" in error_line(err)
    code, out, err = _cli(capsys, "evaluate", "--real", data, "--synthetic", synthetic, "--schema", schema,
                          "--out", str(tmp_path / "e2"), "--target", "nope", "--no-mlflow")
    assert code == 2 and "parameter 'target'" in err and not (tmp_path / "e2").exists()
    code, out, err = _cli(capsys, "evaluate", "--real", data, "--synthetic", synthetic, "--schema", schema,
                          "--out", str(tmp_path / "e3"), "--holdout-fraction", "1.5", "--no-mlflow")
    assert code == 2 and "holdout_fraction" in err


def test_run_with_evaluate_fits_on_train_part_and_logs_to_its_own_run(spark, spark_home, adult_sample_paths, tmp_path,
                                                                       capsys, monkeypatch):
    monkeypatch.setenv("SPARK_SYNTH_LEDGER_PREFIX", f"test-{uuid.uuid4().hex[:8]}:")
    data, schema = adult_sample_paths
    output = str(tmp_path / "syn.parquet")
    code, out, err = _cli(capsys, "run", "--engine", "independent", "--input", data, "--schema", schema, "--epsilon", "1", "--delta", "1e-9",
                          "--rows", "2000", "--output", output, "--seed", "1", "--evaluate", "--holdout-fraction", "0.3")
    assert code == 0, err
    summary = json.loads(out)
    evaluation = summary["evaluation"]
    metrics = json.loads(open(evaluation["metrics"]).read())
    assert evaluation["metrics"].endswith("syn_evaluation/metrics.json") and evaluation["not_private"] is True
    # the synthesizer saw only the train part: ~70% of the 5,000 rows
    assert metrics["rows"]["real_train"] + metrics["rows"]["real_holdout"] == 5000
    assert 0.25 < metrics["rows"]["real_holdout"] / 5000 < 0.35
    assert metrics["privacy_budget"]["epsilon_spent"] == pytest.approx(summary["epsilon_spent"])
    client = mlflow.MlflowClient()
    run = client.get_run(summary["mlflow_run_id"])
    assert run.data.params["fit_on"] == "train part (evaluate)"
    # evaluation reads real rows: its own run, nested under the fit's and tagged not private — never the DP model's run
    assert not any(k.startswith("eval_") for k in run.data.metrics) and "spark_synth.evaluation" not in run.data.tags
    assert client.list_artifacts(run.info.run_id, "evaluation") == []
    child = client.get_run(evaluation["mlflow_run_id"])
    assert child.data.tags["spark_synth.evaluation"] == "not private: reads real rows"
    assert child.data.tags["mlflow.parentRunId"] == child.data.tags["spark_synth.fit_run_id"] == run.info.run_id
    assert "spark_synth.model_uri" not in child.data.tags and "spark_synth.fit_id" not in child.data.tags
    assert "eval_utility.best.tstr.auroc" in child.data.metrics and "eval_privacy_proxies.membership_auc" in child.data.metrics
    assert {a.path for a in client.list_artifacts(child.info.run_id, "evaluation")} == {
        "evaluation/metrics.json", "evaluation/report.html"}
    # a release tags the evaluation apart from the guarantee's tags, under keys that say it is not private
    name = f"evaluated_{uuid.uuid4().hex[:6]}"
    released = release(run.info.run_id, name)
    tags = client.get_model_version(name, released["version"]).tags
    auroc = child.data.metrics["eval_utility.best.tstr.auroc"]
    assert tags["not_private.eval_utility.best.tstr.auroc"] == repr(auroc)
    assert tags["not_private.evaluation_run_id"] == child.info.run_id and "NOT covered" in tags["not_private.evaluation"]
    assert not any("eval" in k for k in tags if not k.startswith("not_private."))
    assert tags["spark_synth.epsilon"] == repr(summary["epsilon_spent"])


@pytest.mark.shared_data
def test_evaluate_adult(spark, shared_data, tmp_path, capsys):
    """Done criterion: `spark-synth evaluate` on adult vs an engine's output writes both files."""
    data, schema = str(shared_data / "adult.csv"), str(shared_data / "adult.schema.json")
    output = str(tmp_path / "adult_syn.parquet")
    code, out, err = _cli(capsys, "run", "--engine", "independent", "--input", data, "--schema", schema, "--epsilon", "1", "--delta", "1e-9",
                          "--rows", "20000", "--output", output, "--seed", "1", "--no-mlflow")
    assert code == 0, err
    code, out, err = _cli(capsys, "evaluate", "--real", data, "--synthetic", output, "--schema", schema,
                          "--out", str(tmp_path / "eval"), "--no-mlflow")
    assert code == 0, err
    metrics = json.loads((tmp_path / "eval" / "metrics.json").read_text())
    assert metrics["marginals"]["1way"]["tvd_mean"] < 0.03  # independent engine at ε=1 on 48k rows
    assert metrics["utility"]["best"]["trtr"]["auroc"] > 0.85  # real data predicts income well
    assert 0.4 < metrics["privacy_proxies"]["share_closer_to_train"] < 0.6
    assert (tmp_path / "eval" / "report.html").stat().st_size > 50_000
