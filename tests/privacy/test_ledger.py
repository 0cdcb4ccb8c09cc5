"""The per-table budget ledger counts every fit exactly once, by its fit id: one fit per MLflow
run, releases of the same fit are one charge, `run`/`fit` charge the declared dataset at fit time
(refused past its cap before anything is written), and concurrent charges near a cap never both
pass. On a real local SQLite MLflow store; the Spark tests are marked."""

from __future__ import annotations

import json
import math
import subprocess
import sys
import threading
import uuid
from pathlib import Path

import mlflow
import pytest

from tests.helpers import error_line

from spark_synth import BudgetExhausted, UserInputError
from spark_synth.cli import build_parser, main
from spark_synth.privacy import rho_from_epsilon
from spark_synth.track import BudgetLedger, log_synthesizer, log_synthesizer_model, mlflow_run, release, use_store
from spark_synth.track.mlflow_tracking import log_fit
from tests.unit.test_release_ledger import fitted

REPO = Path(__file__).resolve().parents[2]
SOURCE = "main.hr.employees"


@pytest.fixture
def store(spark_home):
    use_store(spark_home)
    return mlflow.MlflowClient()


@pytest.fixture
def prefix(monkeypatch) -> str:
    """A fresh ledger prefix, also the default one (as ``$SPARK_SYNTH_LEDGER_PREFIX``) for run/fit."""
    value = f"test-{uuid.uuid4().hex[:8]}:"
    monkeypatch.setenv("SPARK_SYNTH_LEDGER_PREFIX", value)
    return value


def logged_run(synth, source: str = SOURCE) -> str:
    with mlflow_run("ledger-test") as run:
        log_synthesizer(synth, source=source)
    return run.info.run_id


def model_name() -> str:
    return f"ledger_{uuid.uuid4().hex[:8]}"


def cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out.strip(), err.strip()


# ---- one fit, one identity, one charge ------------------------------------------------------------
def test_a_run_holds_one_fit_and_a_second_different_fit_is_refused(store, prefix):
    a, b = fitted(seed=1), fitted(seed=2)
    assert a.privacy_report_.fit_id != b.privacy_report_.fit_id
    with mlflow_run("two fits") as run:
        log_synthesizer(a, source=SOURCE)
        with pytest.raises(UserInputError) as info:
            log_synthesizer(b, source=SOURCE)
        with pytest.raises(UserInputError, match="already holds fit"):
            log_fit({}, b.privacy_report_, {})  # what `fit` inside an active run would call
    message = str(info.value)
    assert run.info.run_id in message and a.privacy_report_.fit_id in message and b.privacy_report_.fit_id in message
    assert "new run" in message and "\n" not in message
    held = store.get_run(run.info.run_id)
    assert held.data.tags["spark_synth.fit_id"] == a.privacy_report_.fit_id  # the first fit's report and model stay
    report = mlflow.artifacts.load_dict(held.info.artifact_uri + "/privacy_report.json")
    model = mlflow.models.get_model_info(held.data.tags["spark_synth.model_uri"])
    assert report["fit_id"] == model.metadata["spark_synth"]["privacy"]["fit_id"] == a.privacy_report_.fit_id


def test_two_fits_released_as_two_models_are_two_charges(store, prefix):
    a, b = fitted(seed=3), fitted(seed=4)
    release(logged_run(a), model_name())
    second = release(logged_run(b), model_name())
    rho = math.fsum([a.privacy_report_.rho_spent, b.privacy_report_.rho_spent])
    assert second["cumulative"]["rho"] == rho and second["fit_id"] == b.privacy_report_.fit_id
    total = BudgetLedger(SOURCE).summary()["cumulative"]
    assert (total["rho"], total["fits"], total["releases"]) == (rho, 2, 2)


def test_one_fit_is_one_charge_however_often_and_from_whichever_run_it_is_released(store, prefix):
    a = fitted(seed=5)
    first_run, second_run = logged_run(a), logged_run(a)  # the same fit logged into two runs
    for run_id in (first_run, first_run, second_run):
        assert release(run_id, model_name())["cumulative"]["rho"] == a.privacy_report_.rho_spent
    ledger = BudgetLedger(SOURCE)
    assert {e.fit_id for e in ledger.entries()} == {a.privacy_report_.fit_id}
    total = ledger.summary()["cumulative"]
    assert (total["rho"], total["fits"], total["releases"]) == (a.privacy_report_.rho_spent, 1, 3)


def test_release_refuses_a_run_whose_model_and_report_are_different_fits(store, prefix):
    a, b = fitted(seed=6), fitted(seed=7)  # the same budget: equal rho, different fits
    with mlflow_run("mixed") as run:
        mlflow.log_dict(a.privacy_report_.to_dict(), "privacy_report.json")
        log_synthesizer_model(b, source=SOURCE)
    name = model_name()
    with pytest.raises(UserInputError, match="does not match the run's privacy report"):
        release(run.info.run_id, name)
    assert store.search_model_versions(f"name = '{name}'") == [] and BudgetLedger(SOURCE).entries() == []


# ---- concurrency ------------------------------------------------------------------------------------
def _two_fits_under_a_cap_for_one() -> list[str]:
    runs = [logged_run(fitted(seed=8)), logged_run(fitted(seed=9))]
    BudgetLedger(SOURCE).set_cap(1.2, 1e-9)  # each fit is epsilon=1: room for one, not two
    return runs


def test_concurrent_releases_near_the_cap_never_both_pass(store, prefix, monkeypatch):
    """Worst interleaving, forced: both entries are recorded before either is verified, and both
    verifications read the ledger before either refusal marks its entry failed."""
    runs = _two_fits_under_a_cap_for_one()
    barrier, read, verify = threading.Barrier(2, timeout=120), threading.Barrier(2, timeout=120), BudgetLedger._verify

    def racing_verify(self, mine):
        entries = self.entries

        def read_together():
            listed = entries()
            read.wait()
            return listed

        self.entries = read_together  # this ledger object only: the later reads below run unpatched
        barrier.wait()
        return verify(self, mine)

    monkeypatch.setattr(BudgetLedger, "_verify", racing_verify)
    names, outcomes = [model_name(), model_name()], {}

    def attempt(i: int) -> None:
        try:
            outcomes[i] = release(runs[i], names[i])["version"]
        except BaseException as exc:  # noqa: BLE001 (recorded and asserted below)
            outcomes[i] = exc

    threads = [threading.Thread(target=attempt, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    assert all(isinstance(o, BudgetExhausted) for o in outcomes.values()) and len(outcomes) == 2, outcomes
    assert all(store.search_model_versions(f"name = '{n}'") == [] for n in names)
    assert BudgetLedger(SOURCE).entries() == []  # refused entries do not count
    monkeypatch.setattr(BudgetLedger, "_verify", verify)
    release(runs[0], names[0])  # after the race, one of them alone fits
    with pytest.raises(BudgetExhausted):
        release(runs[1], names[1])


_RACER = """
import json, pathlib, sys, time
from spark_synth import BudgetExhausted
from spark_synth.track import release
run_id, name, folder, me = sys.argv[1], sys.argv[2], pathlib.Path(sys.argv[3]), sys.argv[4]
(folder / me).touch()
while len(list(folder.iterdir())) < 2:
    time.sleep(0.005)
try:
    print(json.dumps({"version": release(run_id, name)["version"]}))
except BudgetExhausted as exc:
    print(json.dumps({"refused": str(exc)}))
"""


def test_concurrent_releases_in_two_processes_never_both_pass(store, prefix, spark_home, tmp_path):
    runs = _two_fits_under_a_cap_for_one()
    ready = tmp_path / "ready"
    ready.mkdir()
    env = {**__import__("os").environ, "MLFLOW_TRACKING_URI": f"sqlite:///{spark_home / 'mlflow.db'}",
           "SPARK_SYNTH_LEDGER_PREFIX": prefix}
    procs = [subprocess.Popen([sys.executable, "-c", _RACER, run_id, model_name(), str(ready), str(i)], env=env,
                              cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for i, run_id in enumerate(runs)]
    results = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err[-3000:]
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert sum("version" in r for r in results) <= 1, results
    total = BudgetLedger(SOURCE).summary()
    assert total["cumulative"]["rho"] <= rho_from_epsilon(1.2, 1e-9) and total["cumulative"]["fits"] <= 1


# ---- run / fit charge the declared dataset at fit time -------------------------------------------
def test_run_and_fit_take_a_dataset_id(adult_sample_paths, capsys):
    data, schema = adult_sample_paths
    for command, extra in (("run", ["--rows", "5", "--output", "o.parquet"]), ("fit", ["--model", "m"])):
        args = build_parser().parse_args([command, "--input", data, "--schema", schema, "--epsilon", "1", "--delta",
                                          "1e-9", "--dataset-id", "main.hr.employees", *extra])
        assert args.dataset_id == "main.hr.employees"
    code, out, err = cli(capsys, "fit", "--engine", "independent", "--input", data, "--schema", schema, "--epsilon", "1", "--delta", "1e-9",
                         "--model", "never-written", "--dataset-id", " ", "--no-mlflow")
    assert code == 2 and out == "" and "'dataset_id (--dataset-id)'" in err and not Path("never-written").exists()


@pytest.mark.spark
def test_run_and_fit_charge_the_dataset_at_fit_time_and_release_adds_nothing(spark, store, prefix,
                                                                             adult_sample_paths, tmp_path, capsys):
    data, schema = adult_sample_paths
    dataset = f"hr.adult_{uuid.uuid4().hex[:6]}"
    fit_args = ["--input", data, "--schema", schema, "--epsilon", "0.5", "--delta", "1e-9", "--dataset-id", dataset]
    code, out, err = cli(capsys, "run", *fit_args, "--rows", "100", "--output", str(tmp_path / "a.parquet"))
    assert code == 0, err
    ran = json.loads(out)
    ledger = BudgetLedger(dataset)
    assert [(e.kind, e.fit_id, e.fit_run_id, e.status) for e in ledger.entries()] == [
        ("fit", ran["fit_id"], ran["mlflow_run_id"], "FINISHED")]
    assert ran["ledger"]["dataset_id"] == dataset and ran["ledger"]["cumulative_rho"] == ran["rho_spent"]
    assert BudgetLedger(data).entries() == []  # keyed by the declared id, not the input path
    assert store.get_run(ran["mlflow_run_id"]).data.tags["spark_synth.source_table"] == dataset

    for _ in range(2):  # releasing the charged fit, even twice, adds nothing
        code, out, err = cli(capsys, "release", "--run-id", ran["mlflow_run_id"], "--name", model_name())
        assert code == 0, err
        released = json.loads(out)
        assert released["source_table"] == dataset and released["cumulative"]["rho"] == ran["rho_spent"]

    code, out, err = cli(capsys, "fit", *fit_args, "--model", str(tmp_path / "model"))
    assert code == 0, err
    fit = json.loads(out)
    rho = math.fsum([ran["rho_spent"], fit["rho_spent"]])
    assert fit["ledger"]["cumulative_rho"] == rho
    total = ledger.summary()["cumulative"]
    assert (total["rho"], total["fits"], total["releases"]) == (rho, 2, 2)


@pytest.mark.spark
def test_a_cap_on_the_dataset_refuses_a_run_and_nothing_is_written(spark, store, prefix, adult_sample_paths,
                                                                   tmp_path, capsys, monkeypatch):
    data, schema = adult_sample_paths
    dataset = f"hr.capped_{uuid.uuid4().hex[:6]}"
    code, _, err = cli(capsys, "budget", "--source-table", dataset, "--budget-cap", "1.2", "--cap-delta", "1e-9")
    assert code == 0, err
    args = ["--input", data, "--schema", schema, "--epsilon", "1", "--delta", "1e-9", "--dataset-id", dataset]
    out_dir = tmp_path / "out"
    out_dir.mkdir()
    code, _, err = cli(capsys, "run", *args, "--rows", "100", "--output", str(out_dir / "first.parquet"))
    assert code == 0, err
    ledger = BudgetLedger(dataset)
    spent = ledger.summary()["cumulative"]
    before = sorted(p.name for p in out_dir.iterdir())

    def refused(*command):
        code, out, err = cli(capsys, *command)
        assert code == 2 and out == "", err
        line = error_line(err)  # after any progress lines, one error line
        assert f"source table '{dataset}' budget cap exceeded" in line and "--budget-cap" in line
        assert sorted(p.name for p in out_dir.iterdir()) == before  # nothing written
        assert ledger.summary()["cumulative"] == spent  # nothing charged

    refused("run", *args, "--rows", "100", "--output", str(out_dir / "second.parquet"))  # before reading a row
    # the binding check after fitting (as when a concurrent fit takes the room in the meantime)
    monkeypatch.setattr(BudgetLedger, "check_room", lambda self, rho, what, **unit: None)
    refused("run", *args, "--rows", "100", "--output", str(out_dir / "third.parquet"))
    refused("fit", *args, "--model", str(out_dir / "model"))
    failed = store.search_runs([ledger._experiment().experiment_id], filter_string="tags.`spark_synth.refused` = 'budget cap'")
    assert len(failed) == 2 and {r.info.status for r in failed} == {"FAILED"}
    for entry in failed:  # the refused fits' MLflow runs hold no model to release
        fit_run = store.get_run(entry.data.tags["spark_synth.fit_run_id"])
        assert fit_run.info.status == "FAILED" and "spark_synth.model_uri" not in fit_run.data.tags


# ---- evaluation never logs into the run holding the DP model --------------------------------------
def test_evaluating_a_fit_run_logs_into_a_nested_run_tagged_not_private(store, prefix, spark_home):
    from spark_synth.track.mlflow_tracking import evaluation_run, log_evaluation

    fit_run = logged_run(fitted(seed=10))
    with evaluation_run(spark_home, run_id=fit_run) as run:  # what `evaluate --mlflow-run-id FIT_RUN` does
        log_evaluation({"eval_marginals.1way.tvd_mean": 0.01}, {})
    child = store.get_run(run.info.run_id)
    assert child.info.run_id != fit_run and child.info.status == "FINISHED"
    assert child.data.tags["spark_synth.evaluation"] == "not private: reads real rows"
    assert child.data.tags["mlflow.parentRunId"] == child.data.tags["spark_synth.fit_run_id"] == fit_run
    assert "eval_marginals.1way.tvd_mean" not in store.get_run(fit_run).data.metrics
    tags = store.get_model_version(name := model_name(), release(fit_run, name)["version"]).tags
    assert tags["not_private.eval_marginals.1way.tvd_mean"] == "0.01" and tags["not_private.evaluation_run_id"] == child.info.run_id
