"""The engine seam on Spark: one scan per round, executor tasks, a new engine without touching the
pipeline, and the same models and rows as before the seam for the same noise."""

import gzip
import io
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import spark_synth.privacy.mechanisms as mechanisms
from spark_synth import Synthesizer, load_schema
from spark_synth.cli import main
from spark_synth.engines import ENGINES, LocalTaskRunner, independent, register_engine, stratified
from spark_synth.engines.splice import components as splice_components
from spark_synth.io import read_input
from spark_synth.measure import answer_frame, answer_queries
from spark_synth.queries import MarginalQuery, MomentQuery
from spark_synth.tasks import SparkTaskRunner
from tests.replay import assert_close
from tests.tiny_engine import TinySelectEngine

pytestmark = pytest.mark.spark
REPLAY = Path(__file__).resolve().parents[1] / "data" / "pre_seam_replay.json.gz"


def _draw(task, seed):
    return task, float(np.random.default_rng(seed).random())


def _fail(task, seed):
    raise ValueError(f"task {task} refuses")


def _timed_sleep(task, seed):
    started = time.time()
    time.sleep(1.5)
    return started, time.time()


def test_spark_task_runner_matches_the_local_runner_and_reraises(spark):
    runner = SparkTaskRunner(spark)
    tasks = ["a", "b", "c", "d", "e"]
    assert runner.map(_draw, tasks, seed=3) == LocalTaskRunner().map(_draw, tasks, seed=3)
    assert runner.map(_draw, tasks, seed=3) != runner.map(_draw, tasks, seed=4)
    assert runner.map(_draw, []) == []
    with pytest.raises(ValueError, match="task b refuses"):
        runner.map(_fail, ["b"])


def test_two_tasks_run_concurrently_on_local_2(spark):
    (a_start, a_end), (b_start, b_end) = SparkTaskRunner(spark).map(_timed_sleep, [0, 1])
    assert max(a_start, b_start) < min(a_end, b_end), "the two tasks did not overlap in time"


def test_one_scan_answers_every_kind_and_equals_numpy(spark, adult_sample_paths):
    data, schema_path = adult_sample_paths
    schema = load_schema(schema_path)
    width = sum(c.size if c.type.value == "categorical" else 1 + c.nullable for c in schema)
    rng = np.random.default_rng(0)
    directions = rng.normal(size=(6, width))
    directions /= np.abs(directions).sum(axis=1, keepdims=True)  # |w·x| ≤ ‖w‖₁ max|x| ≤ 1
    queries = [MarginalQuery(("age",)), MarginalQuery(("sex", "race")), MomentQuery(name="m", directions=directions, degree=5)]
    df = read_input(spark, data).repartition(3)
    distributed = answer_queries(df, schema, queries)
    local = answer_frame(df.toPandas(), schema, queries)
    for d, n in zip(distributed, local):
        assert d.dtype == np.int64 and np.array_equal(d, n)


@pytest.mark.parametrize("engine, options, passes", [("independent", {}, 1),
                                                      ("splice", {"steps": 5, "quantile_encoding": 0.0, "pair_share": 0.0}, 1),
                                                      ("splice", {"steps": 5, "quantile_encoding": 0.0}, 2),  # pairs after the anchors
                                                      ("splice", {"steps": 5}, 2)])  # pair candidates in the moments' scan
def test_measure_passes_per_round(spark, adult_sample_paths, engine, options, passes):
    data, schema = adult_sample_paths
    synth = Synthesizer(engine, epsilon=1.0, delta=1e-9, engine_options=options).fit(read_input(spark, data), schema)
    assert synth.measure_passes_ == passes and len(synth.measure_pass_seconds_) == passes


@pytest.fixture
def tiny_engine():
    register_engine(TinySelectEngine)
    yield TinySelectEngine
    ENGINES.pop(TinySelectEngine.name)


def test_a_new_engine_needs_only_a_registration(spark, adult_sample_paths, tiny_engine, tmp_path, capsys):
    data, schema_path = adult_sample_paths
    synth = Synthesizer("tiny-select", epsilon=1.0, delta=1e-9, engine_options={"rounds": 2}).fit(read_input(spark, data), schema_path)
    report = synth.privacy_report_
    kinds = [e.kind for e in report.entries]
    assert kinds == ["measurement"] * 15 + ["selection", "measurement"] * 2
    assert report.epsilon_spent == pytest.approx(1.0, rel=1e-9) and report.epsilon_spent <= 1.0
    assert synth.measure_passes_ == 2  # the 1-way histograms, then the whole 2-way candidate workload
    assert len(synth.model_.pairs) == 2 and synth.sample(300, seed=1, spark=spark).count() == 300
    out = tmp_path / "tiny.parquet"
    assert main(["run", "--input", data, "--schema", schema_path, "--engine", "tiny-select", "--engine-option", "rounds=1",
                 "--epsilon", "1", "--delta", "1e-9", "--rows", "50", "--output", str(out), "--no-mlflow"]) == 0
    assert json.loads(capsys.readouterr().out)["engine"] == "tiny-select"
    with pytest.raises(Exception, match="tiny-select.rounds"):
        Synthesizer("tiny-select", epsilon=1.0, delta=1e-9, engine_options={"rounds": 0})


@pytest.mark.parametrize("engine", ["independent", "splice"])
def test_same_noise_same_models_and_rows_as_before_the_seam(spark, adult_sample_paths, engine, monkeypatch):
    """Regression: the noise drawn by the pre-seam pipeline (tests/data/record_pre_seam.py, run on the
    commit before the seam) is replayed; the same budget split, models and rows must come out."""
    with gzip.open(REPLAY, "rt") as f:
        recorded = json.load(f)[engine]
    replay = iter(recorded["noisy_integer_values"])

    def replayed_noise(values, measurement, integer):
        noisy = np.asarray(next(replay), dtype=np.float64)
        assert integer and noisy.size == np.asarray(values).size
        return noisy.reshape(np.shape(values))

    monkeypatch.setattr(mechanisms, "add_gaussian_noise", replayed_noise)
    data, schema = adult_sample_paths
    # the pre-seam precision, learning rate and component count (the recording took the then-defaults), and its 1-way
    # histograms: one flat release per column, no null floor; SPLICE always measures its moments
    flat = {"one_way_fine_share": 1.0, "null_floor": 0.0}
    options = dict(recorded["options"], **flat, **({"moment_fraction_bits": 36, "learning_rate": 0.05, "min_moment_snr": 0.0,
                                                    "marginal_share": 0.3, "pair_share": 0.0, "components": 32,
                                                    "fits": 1} if engine == "splice" else {}))
    synth = Synthesizer(engine, epsilon=1.0, delta=1e-9, engine_options=options).fit(read_input(spark, data), schema)
    assert next(replay, None) is None  # every recorded release was replayed, in order
    # the same split, to the last ulp or two: exact accounting (2baadfe) may leave "what is left" one ulp larger
    assert [(e.name, e.sigma, e.rho) for e in synth.privacy_report_.entries] == [
        (r["name"], pytest.approx(r["sigma"], rel=1e-14), pytest.approx(r["rho"], rel=1e-14)) for r in recorded["releases"]]
    assert synth.privacy_report_.rho_spent == pytest.approx(recorded["rho_spent"], rel=1e-14)
    assert synth.privacy_report_.rho_spent <= synth.privacy_report_.rho_requested
    assert_close(recorded["model_state"], json.loads(json.dumps(synth.model_.to_state())))
    # the pre-seam rows were i.i.d. draws; with those draws put back, the same model gives the same rows
    for module in (stratified, independent, splice_components):
        monkeypatch.setattr(module, "stratified_uniforms", lambda n, rng, groups=None: rng.random(n))
    codes = synth.model_.sample_codes(3000, np.random.default_rng(7))
    expected = np.asarray(recorded["sample_codes"])
    gaussian = synth.model_.gaussian if engine == "splice" else None
    block = list(gaussian.columns) if gaussian is not None else []
    others = [j for j in range(codes.shape[1]) if j not in block]
    assert np.array_equal(codes[:, others], expected[:, others])
    # Gaussian columns: coded by stratified rank since 2026-12-04, not by u = F_model(g) (docs/splice.md).
    # From the same latent draws, a row's new u (its rank among the 3000, stratified) is within
    # sup|F_model − F_3000| + 1/3000 of its recorded u, so the two codes' anchor-CDF intervals lie that close
    for i, j in enumerate(block):
        cumulative = np.cumsum(gaussian.calibration[i]) / np.sum(gaussian.calibration[i])
        lower = np.concatenate([[0.0], cumulative[:-1]])
        new, old = codes[:, j], expected[:, j]
        values = (new < len(cumulative)) & (old < len(cumulative))  # not null
        new, old = new[values], old[values]
        gap = np.maximum(0.0, np.maximum(lower[new] - cumulative[old], lower[old] - cumulative[new]))
        assert values.mean() > 0.9 and gap.max() < 0.05, (schema, j, gap.max())
    monkeypatch.undo()
    # on Spark the executors draw stratified rows (not the recording's): reproducible per seed and partitioning
    rows = synth.sample(400, seed=11, spark=spark, partitions=2).toPandas()
    assert rows.to_csv(index=False) == synth.sample(400, seed=11, spark=spark, partitions=2).toPandas().to_csv(index=False)
    assert list(rows.columns) == list(pd.read_csv(io.StringIO(recorded["spark_sample_csv"])).columns) and len(rows) == 400
