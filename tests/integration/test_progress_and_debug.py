"""What a run says while it works: progress lines on stderr, loss curves as MLflow step metrics,
``--debug`` (labelled as not covered by the guarantee), and a report that leaves the caller's
matplotlib alone."""

import json
import logging
import uuid

import mlflow
import pytest

from spark_synth.cli import main
from spark_synth.logs import DEBUG_NOTICE, ROOT

pytestmark = pytest.mark.spark


def _run(capsys, *args):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out.strip(), captured.err.strip().splitlines()


@pytest.fixture(autouse=True)
def quiet_logger_afterwards():
    yield
    root = logging.getLogger(ROOT)
    for handler in [h for h in root.handlers if not isinstance(h, logging.NullHandler)]:
        root.removeHandler(handler)
    root.setLevel(logging.NOTSET)
    root.propagate = True


@pytest.mark.parametrize("engine, options, curves", [
    ("splice", ["--engine-option", "steps=40"], {"fit.curve.match_loss", "fit.curve.match_loss_2"}),
    ("fpt", ["--engine-option", "rounds_per_column=0.2"], {"fit.curve.round_loss", "fit.curve.final_loss"}),
])
def test_progress_lines_and_loss_curves(spark, spark_home, adult_sample_paths, tmp_path, capsys, monkeypatch, engine,
                                         options, curves):
    monkeypatch.setenv("SPARK_SYNTH_LEDGER_PREFIX", f"test-{uuid.uuid4().hex[:8]}:")
    data, schema = adult_sample_paths
    code, out, err = _run(capsys, "run", "--input", data, "--schema", schema, "--engine", engine, *options, "--epsilon", "1",
                          "--delta", "1e-9", "--rows", "200", "--output", tmp_path / "o.parquet", "--seed", "1")
    assert code == 0, err
    err = [line for line in err if " INFO mlflow." not in line]  # MLflow's own notice when it creates its store
    assert all(line.startswith("spark-synth: ") for line in err), err
    assert f"spark-synth: fit: engine {engine}, epsilon 1, delta 1e-09, 15 columns" in err
    assert "spark-synth: measure: pass 1 over the table" in "\n".join(err)
    assert any(line.startswith("spark-synth: sample and write: 200 rows to ") for line in err)
    assert not any(" s" in line.split("loss")[0][-4:] or "seconds" in line for line in err)  # no timings
    client = mlflow.MlflowClient()
    run_id = json.loads(out)["mlflow_run_id"]
    for key in curves:
        history = client.get_metric_history(run_id, key)
        assert len(history) >= 2 and sorted(m.step for m in history) == list(range(len(history)))
    if engine == "splice":
        losses = [m.value for m in sorted(client.get_metric_history(run_id, "fit.curve.match_loss"), key=lambda m: m.step)]
        assert min(losses) < losses[0]  # Match made progress
        assert any(line.startswith("spark-synth: splice Match: step 4/40, loss ") for line in err)
        for fit in ("1/2", "2/2"):  # the final Match: two pooled fits (the first Match, which scores the pairs, is one)
            assert any(line.startswith(f"spark-synth: splice Match, fit {fit}: step 40/40, loss ") for line in err), err
    else:
        assert any(line.startswith("spark-synth: fpt: round 1 selected ") and line.endswith(" sigma per measured cell (RMS)")
                   for line in err), err


def test_debug_says_it_is_not_covered_and_shows_the_traceback(spark, tmp_path, capsys, adult_sample_paths):
    data, schema = adult_sample_paths
    args = ["run", "--input", tmp_path / "missing.csv", "--schema", schema, "--epsilon", "1", "--delta", "1e-9",
            "--rows", "10", "--output", tmp_path / "o.parquet", "--no-mlflow"]
    code, _, err = _run(capsys, *args)
    assert code == 2 and len(err) == 1 and err[0].startswith("spark-synth: error: ")
    code, _, err = _run(capsys, *args, "--debug")
    assert code == 2 and err[0] == DEBUG_NOTICE and "NOT covered by the DP guarantee" in err[0]
    assert "Traceback (most recent call last):" in err and err[-1].startswith("spark-synth: error: ")
    code, _, err_front = _run(capsys, "--debug", *args)  # the flag before the command works the same
    assert code == 2 and err_front[0] == DEBUG_NOTICE


def test_the_report_leaves_the_callers_matplotlib_alone(spark, adult_sample_paths, tmp_path, capsys):
    import matplotlib

    matplotlib.use("svg")  # a notebook's own choice
    data, schema = adult_sample_paths
    code, _, err = _run(capsys, "run", "--input", data, "--schema", schema, "--epsilon", "1", "--delta", "1e-9", "--rows",
                        "500", "--output", tmp_path / "o.parquet", "--seed", "1", "--no-mlflow", "--evaluate")
    assert code == 0, err
    assert (tmp_path / "o_evaluation" / "report.html").stat().st_size > 10_000
    assert matplotlib.get_backend() == "svg"
    import matplotlib.pyplot as plt

    assert plt.get_fignums() == []  # no figure left open in pyplot's registry
