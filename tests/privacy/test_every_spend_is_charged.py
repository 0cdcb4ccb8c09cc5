"""Every spend reaches the table's budget ledger and stays there (issue 45, items 1-4):

1. ``release`` records a DP-drafted schema's pre-pass (by its id, once, whichever path records it);
2. a charge never stops counting once anything derived from it may have left the process (a
   reservation becomes a charge when noise is drawn / a model is logged or registered);
3. the Python API charges ``fit(..., dataset_id=...)`` and warns once when it records nothing;
4. the default ledger is per user (``~/.spark-synth`` or ``$SPARK_SYNTH_HOME``), not per directory.

In each case ``spark-synth budget`` must agree with the sum of every fit's and pre-pass's ρ. On real
local SQLite MLflow stores; the Spark tests are marked.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
import sys
import uuid
import warnings
from dataclasses import replace
from pathlib import Path

import mlflow
import pytest

from spark_synth import BudgetExhausted, DataValidationError, Synthesizer, load_schema
from spark_synth.cli import main
from spark_synth.engines import ENGINES, IndependentEngine, register_engine
from spark_synth.errors import UnrecordedSpendWarning
from spark_synth.io import read_input
from spark_synth.io.locations import source_key
from spark_synth.privacy import PrivacyBudget, epsilon_from_rho, rho_from_epsilon
from spark_synth.schema.cost import PrepassCost
from spark_synth.track import BudgetLedger, release
from spark_synth.track.ledger import INTERRUPTED_TAG, SCHEMA
from tests.privacy.test_ledger import cli, logged_run, model_name, prefix, store  # noqa: F401 (fixtures)
from tests.unit.test_release_ledger import fitted

SOURCE = "main.hr.payroll"


def budget_total(capsys, table: str) -> dict:
    """What `spark-synth budget --source-table TABLE` prints."""
    code, out, err = cli(capsys, "budget", "--source-table", table)
    assert code == 0, err
    return json.loads(out)


def agrees_with_its_entries(summary: dict) -> None:
    """The cumulative ρ is the sum of every entry's ρ, each fit and pre-pass counted once."""
    once = {e["fit_id"] or f"run:{e['fit_run_id']}": e["rho"] for e in summary["releases"]}
    assert summary["cumulative"]["rho"] == math.fsum(once.values())


# ---- 1. release records the schema's DP pre-pass ------------------------------------------------
def prepass_cost(rho: float = 0.5) -> PrepassCost:
    return PrepassCost(id=uuid.uuid4().hex, rho=rho, delta_approx=5e-10, epsilon=epsilon_from_rho(rho, 5e-10),
                       delta_conversion=5e-10)


def drafted_by(cost: PrepassCost, seed: int) -> Synthesizer:
    """A fit whose schema carries a pre-pass cost, as one fitted with a `schema init --dp-bounds` file."""
    synth = fitted(epsilon=0.5, seed=seed)
    synth.schema_ = replace(synth.schema_, prepass=cost)
    synth.privacy_report_ = replace(synth.privacy_report_, schema_prepass=cost)
    return synth


def test_release_records_a_dp_drafted_schemas_prepass_once(store, prefix, capsys):
    """The reproduced bug: pre-pass ρ = 0.5 in the schema, the ledger held the fit's ρ only."""
    cost = prepass_cost(0.5)
    a, b = drafted_by(cost, 20), drafted_by(cost, 21)  # two fits with one schema (drafted with --no-mlflow)
    first = release(logged_run(a, SOURCE), model_name())
    assert first["cumulative"]["rho"] == math.fsum([cost.rho, a.privacy_report_.rho_spent])
    version = store.get_model_version(first["model"], first["version"]).tags
    assert float(version["spark_synth.cumulative_rho"]) == first["cumulative"]["rho"]
    release(logged_run(b, SOURCE), model_name())
    summary = budget_total(capsys, SOURCE)
    assert [e["kind"] for e in summary["releases"]].count(SCHEMA) == 1  # the same pre-pass is never charged twice
    total = summary["cumulative"]
    assert total["rho"] == math.fsum([cost.rho, a.privacy_report_.rho_spent, b.privacy_report_.rho_spent])
    assert (total["delta_approx"], total["fits"], total["releases"]) == (5e-10, 2, 2)
    agrees_with_its_entries(summary)

    # a ledger that holds the pre-pass already (`schema init --dp-bounds` with MLflow on) gets no second entry
    other = f"{SOURCE}_drafted"
    ledger = BudgetLedger(other)
    with ledger.reserve(kind=SCHEMA, fit_run_id="", fit_id=cost.id, rho=cost.rho, epsilon=cost.epsilon,
                        delta=cost.delta_conversion, delta_approx=cost.delta_approx) as charge:
        charge.bind()
    c = drafted_by(cost, 22)
    assert release(logged_run(c, other), model_name())["cumulative"]["rho"] == math.fsum([cost.rho, c.privacy_report_.rho_spent])
    assert [e.kind for e in ledger.entries()].count(SCHEMA) == 1


def test_a_prepass_is_recorded_even_when_it_puts_the_table_past_its_cap(store, prefix):
    """It was spent when the schema was drafted: the release is refused, the pre-pass stays counted."""
    cost, capped = prepass_cost(0.5), f"{SOURCE}_capped"
    BudgetLedger(capped).set_cap(1.0, 1e-9)  # rho 0.0239...: less than the pre-pass alone
    run_id, name = logged_run(drafted_by(cost, 23), capped), model_name()
    with pytest.raises(BudgetExhausted, match="nothing was registered"):
        release(run_id, name)
    assert store.search_model_versions(f"name = '{name}'") == []
    assert [(e.kind, e.fit_id, e.rho) for e in BudgetLedger(capped).entries()] == [(SCHEMA, cost.id, cost.rho)]


# ---- 2. a reservation becomes a charge ----------------------------------------------------------
def test_a_bound_charge_counts_whatever_happens_next_and_an_unbound_one_does_not(store, prefix):
    ledger = BudgetLedger(SOURCE)
    with pytest.raises(KeyboardInterrupt):
        with ledger.reserve(kind="fit", fit_id="released", fit_run_id="r1", rho=0.01, epsilon=epsilon_from_rho(0.01, 1e-9),
                            delta=1e-9) as charge:
            charge.bind()  # a model was logged
            raise KeyboardInterrupt  # Ctrl-C while the rows are written
    with pytest.raises(KeyboardInterrupt):
        with ledger.reserve(kind="fit", fit_id="unreleased", fit_run_id="r2", rho=0.02, epsilon=epsilon_from_rho(0.02, 1e-9),
                            delta=1e-9):
            raise KeyboardInterrupt  # before any noise was drawn
    entries = ledger.entries()
    assert [(e.fit_id, e.status) for e in entries] == [("released", "FINISHED")]
    assert store.get_run(entries[0].run_id).data.tags[INTERRUPTED_TAG] == "KeyboardInterrupt"
    assert ledger.summary()["cumulative"]["rho"] == 0.01


@pytest.mark.spark
def test_ctrl_c_during_the_write_leaves_the_fit_charged_while_its_model_is_out(spark, store, prefix, adult_sample_paths,
                                                                                tmp_path, capsys, monkeypatch):
    """The reproduced bug: a FAILED ledger entry, a loadable model, and `budget` saying epsilon 0."""
    import spark_synth.io

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt  # Ctrl-C in the middle of writing the rows

    monkeypatch.setattr(spark_synth.io, "write_output", interrupted)
    data, schema = adult_sample_paths
    dataset, output = f"hr.interrupted_{uuid.uuid4().hex[:6]}", tmp_path / "never.parquet"
    with pytest.raises(KeyboardInterrupt):
        main(["run", "--engine", "independent", "--input", data, "--schema", schema, "--epsilon", "0.5", "--delta", "1e-9", "--rows", "100",
              "--output", str(output), "--dataset-id", dataset])
    capsys.readouterr()
    assert not output.exists()
    entries = BudgetLedger(dataset).entries()
    assert [(e.kind, e.status) for e in entries] == [("fit", "FINISHED")]
    fit_run = store.get_run(entries[0].fit_run_id)
    assert fit_run.info.status == "FAILED"
    model = mlflow.pyfunc.load_model(fit_run.data.tags["spark_synth.model_uri"])  # the model is out ...
    assert len(model.predict({"rows": 3, "seed": 1})) == 3
    summary = budget_total(capsys, dataset)  # ... and counted
    assert summary["cumulative"]["fits"] == 1 and summary["cumulative"]["rho"] == fit_run.data.metrics["rho_spent"]
    assert summary["cumulative"]["epsilon"] == pytest.approx(0.5, rel=1e-9)
    agrees_with_its_entries(summary)


class InterruptedAfterNoise(IndependentEngine):
    """Independent, with a Ctrl-C once its noisy histograms are drawn."""

    name = "interrupted-after-noise"

    def fit_measurements(self, schema, measurements):
        raise KeyboardInterrupt


@pytest.fixture
def interrupted_engine():
    register_engine(InterruptedAfterNoise)
    yield InterruptedAfterNoise
    ENGINES.pop(InterruptedAfterNoise.name)


@pytest.mark.spark
def test_a_fit_stopped_after_its_noise_stays_charged_and_one_refused_before_stays_free(spark, store, prefix,
                                                                                     adult_sample_paths, interrupted_engine):
    data, schema = adult_sample_paths
    df, dataset = read_input(spark, data), f"hr.stopped_{uuid.uuid4().hex[:6]}"
    with pytest.raises(DataValidationError):  # an empty table is refused before any noise: nothing released
        Synthesizer("independent", epsilon=0.5, delta=1e-9).fit(df.limit(0), schema, dataset_id=dataset)
    assert BudgetLedger(dataset).entries() == []
    with pytest.raises(KeyboardInterrupt):
        Synthesizer(InterruptedAfterNoise.name, epsilon=0.5, delta=1e-9).fit(df, schema, dataset_id=dataset)
    [entry] = BudgetLedger(dataset).entries()
    assert (entry.kind, entry.status, entry.rho) == ("fit", "FINISHED", PrivacyBudget(0.5, 1e-9).rho)  # all it reserved
    assert store.get_run(entry.run_id).data.tags[INTERRUPTED_TAG] == "KeyboardInterrupt"


# ---- 3. the Python API goes through the ledger -------------------------------------------------
@pytest.mark.spark
def test_the_python_api_charges_its_dataset_id_and_warns_once_without_one(spark, store, prefix, adult_sample_paths,
                                                                          tmp_path, capsys):
    data, schema_path = adult_sample_paths
    source = tmp_path / "people.csv"  # a table no other test fits
    shutil.copy(data, source)
    df, schema = read_input(spark, str(source)), load_schema(schema_path)

    with pytest.warns(UnrecordedSpendWarning) as caught:
        unrecorded = Synthesizer("independent", epsilon=0.5, delta=1e-9).fit(df, schema)
    message = str(next(w for w in caught if w.category is UnrecordedSpendWarning).message)
    assert str(source) in message and "dataset_id=" in message and "no budget ledger" in message
    assert unrecorded.ledger_ is None and BudgetLedger(str(source)).entries() == []
    with warnings.catch_warnings(record=True) as again:
        warnings.simplefilter("always")
        Synthesizer("independent", epsilon=0.5, delta=1e-9).fit(df, schema)
        charged = Synthesizer("independent", epsilon=0.5, delta=1e-9).fit(df, schema, dataset_id=str(source))
    assert not [w for w in again if w.category is UnrecordedSpendWarning]  # once per table; none when charged

    report = charged.privacy_report_
    entries = BudgetLedger(str(source)).entries()
    assert [(e.kind, e.fit_id, e.status, e.rho) for e in entries] == [("fit", report.fit_id, "FINISHED", report.rho_spent)]
    assert charged.ledger_["dataset_id"] == source_key(str(source)) and charged.ledger_["cumulative_rho"] == report.rho_spent
    assert charged.ledger_["store"] == mlflow.get_tracking_uri()

    # DGM: its partitions, fitted on the executors, are one fit and one charge of its whole spend
    names = schema.names
    dgm = Synthesizer("dgm", epsilon=0.5, delta=1e-9, engine_options={
        "partitions": [list(names[: len(names) // 2]), list(names[len(names) // 2:])], "engines": "independent",
        "validator": "none"}).fit(df, schema, dataset_id=str(source))
    summary = budget_total(capsys, str(source))
    assert summary["cumulative"]["rho"] == math.fsum([report.rho_spent, dgm.privacy_report_.rho_spent])
    assert summary["cumulative"]["fits"] == 2
    agrees_with_its_entries(summary)

    # past the table's cap a fit is refused before a row is read, and charges nothing
    BudgetLedger(str(source)).set_cap(summary["cumulative"]["epsilon"] * 1.01, 1e-9)
    with pytest.raises(BudgetExhausted, match="budget cap exceeded"):
        Synthesizer("independent", epsilon=0.5, delta=1e-9).fit(df, schema, dataset_id=str(source))
    assert budget_total(capsys, str(source))["cumulative"]["rho"] == summary["cumulative"]["rho"]


# ---- 4. the default ledger is per user ----------------------------------------------------------
def test_the_default_ledger_is_per_user_not_per_working_directory(tmp_path, monkeypatch):
    user, here, there = tmp_path / "user", tmp_path / "project_a", tmp_path / "project_b"
    for folder in (user, here, there):
        folder.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("SPARK_SYNTH_HOME", "MLFLOW_TRACKING_URI", "SPARK_SYNTH_LEDGER_PREFIX", "DATABRICKS_RUNTIME_VERSION")}
    env["HOME"] = str(user)

    def budget(cwd: Path, *extra: str, stderr: list | None = None) -> dict:
        done = subprocess.run([sys.executable, "-c", "import sys; from spark_synth.cli import main; sys.exit(main())",
                               "budget", "--source-table", "main.hr.salaries", *extra],
                              cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr[-3000:]
        if stderr is not None:
            stderr += done.stderr.splitlines()
        return json.loads(done.stdout.strip().splitlines()[-1])

    set_here = budget(here, "--budget-cap", "2", "--cap-delta", "1e-9")
    seen_there = budget(there)
    expected = f"sqlite:///{(user / '.spark-synth' / 'mlflow.db').resolve()}"
    assert set_here["store"] == seen_there["store"] == expected  # says where it is
    assert seen_there["cap"]["epsilon"] == 2.0  # the same ledger, wherever it is run from
    assert (user / ".spark-synth" / "mlflow.db").is_file()
    assert not (here / ".spark-synth").exists() and not (there / ".spark-synth").exists()
    assert rho_from_epsilon(2.0, 1e-9) == pytest.approx(seen_there["cap"]["rho"])
    # a project holding an older spark-synth's per-directory store is told its ledgers are not counted
    legacy = tmp_path / "legacy_project"
    (legacy / ".spark-synth").mkdir(parents=True)
    shutil.copy(user / ".spark-synth" / "mlflow.db", legacy / ".spark-synth" / "mlflow.db")
    said: list[str] = []
    assert budget(legacy, stderr=said)["store"] == expected
    warning = [line for line in said if line.startswith("spark-synth: WARNING:")]
    assert len(warning) == 1 and str((legacy / ".spark-synth" / "mlflow.db").resolve()) in warning[0], said
    assert "NOT counted" in warning[0] and f"SPARK_SYNTH_HOME={(legacy / '.spark-synth').resolve()}" in warning[0]
    quiet: list[str] = []
    budget(there, stderr=quiet)
    assert not [line for line in quiet if "WARNING" in line], quiet

    from spark_synth.session import store_home

    monkeypatch.setenv("SPARK_SYNTH_HOME", str(tmp_path / "explicit"))  # what the test suite does
    assert store_home() == (tmp_path / "explicit").resolve()
    monkeypatch.delenv("SPARK_SYNTH_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "someone"))
    assert store_home() == (tmp_path / "someone" / ".spark-synth").resolve()
