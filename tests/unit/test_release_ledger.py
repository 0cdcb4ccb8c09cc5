"""Releases and the per-table budget ledger, on a real local SQLite MLflow store (no Spark: the
synthesizers here are fitted from noisy counts the privacy layer releases, as the pipeline does)."""

from __future__ import annotations

import json
import math
import uuid

import mlflow
import numpy as np
import pytest

from spark_synth import BudgetExhausted, Synthesizer, UserInputError
from spark_synth.cli import main
from spark_synth.engines import IndependentEngine
from spark_synth.engines.one_way import one_way_queries
from spark_synth.privacy import PrivacyReport
from spark_synth.privacy import PrivacyBudget, PrivacyFilter, epsilon_from_rho, release_query, rho_from_epsilon, split_rho
from spark_synth.track import BudgetLedger, LedgerEntry, check_privacy_report, compose, log_synthesizer, mlflow_run, release
from tests.helpers import error_line, tiny_schema

SOURCE = "main.sales.customers"


def fitted(epsilon: float = 1.0, delta: float = 1e-9, seed: int = 0, not_covered: str | None = None) -> Synthesizer:
    """A synthesizer fitted the pipeline's way, from DP counts (here of a made-up histogram);
    ``not_covered`` records an opt-in use of real rows outside the guarantee (as DGM's validator=real)."""
    schema, engine = tiny_schema(), IndependentEngine()
    privacy_filter = PrivacyFilter(PrivacyBudget(epsilon, delta))
    queries = one_way_queries(schema)
    rng = np.random.default_rng(seed)
    measurements = [release_query(privacy_filter, q, rng.integers(50, 500, schema[q.columns[0]].size), rho)
                    for q, rho in zip(queries, split_rho(privacy_filter.rho_total, [1.0] * len(queries)))]
    if not_covered:
        privacy_filter.record_not_covered(not_covered, "uniform sample of at most 100 real rows (seed 0)")
    synth = Synthesizer("independent", epsilon=epsilon, delta=delta)
    synth.model_, synth.schema_, synth.timings_ = engine.fit_measurements(schema, measurements), schema, {}
    synth.privacy_report_, synth.measure_passes_ = privacy_filter.report(), 1
    return synth


@pytest.fixture
def store(spark_home):
    from spark_synth.track import use_store

    use_store(spark_home)
    return mlflow.MlflowClient()


@pytest.fixture
def prefix() -> str:
    return f"test-{uuid.uuid4().hex[:8]}:"


def logged_run(synth: Synthesizer, source: str = SOURCE) -> str:
    with mlflow_run("ledger-test") as run:
        log_synthesizer(synth, source=source)
    return run.info.run_id


def cli(capsys, *args):
    code = main(list(args))
    out, err = capsys.readouterr()
    return code, out.strip(), err.strip()


# ---- composition ---------------------------------------------------------------------------------
def entry(fit: str, rho: float, delta: float) -> LedgerEntry:
    return LedgerEntry(uuid.uuid4().hex, fit, rho, epsilon_from_rho(rho, delta), delta, "m", "1", "FINISHED", 0)


def test_compose_adds_rho_once_per_fit_and_converts_at_the_stated_delta():
    entries = [entry("a", 0.01, 1e-9), entry("b", 0.02, 1e-6), entry("a", 0.01, 1e-9)]  # fit a released twice
    total = compose(entries, None)
    assert total["rho"] == pytest.approx(0.03, rel=1e-15) and total["fits"] == 2 and total["releases"] == 3
    assert total["delta"] == 1e-9  # no cap: the smallest delta any release used
    assert total["epsilon"] == epsilon_from_rho(0.03, 1e-9)
    at_cap = compose(entries, 1e-5)
    assert at_cap["epsilon"] == epsilon_from_rho(0.03, 1e-5) < total["epsilon"]
    assert compose([], None) == {"rho": 0.0, "epsilon": 0.0, "delta": None, "delta_approx": 0.0, "releases": 0, "fits": 0}


def test_ledger_names_are_stable_and_keep_sources_apart():
    a, b = BudgetLedger("Main.Sales.Customers", prefix="p:"), BudgetLedger("main.sales.customers", prefix="p:")
    assert a.experiment_name == b.experiment_name == "p:main.sales.customers"
    path1, path2 = BudgetLedger("/data/a b/t", prefix="p:"), BudgetLedger("/data/a_b/t", prefix="p:")
    assert path1.experiment_name != path2.experiment_name and "/" not in path1.experiment_name[2:]


# ---- the privacy report check ----------------------------------------------------------------------
def test_complete_report_passes_and_each_gap_is_named():
    report = fitted().privacy_report_.to_dict()
    assert check_privacy_report(report) == PrivacyReport.from_dict(report)
    cases = {
        "missing 'releases'": lambda r: r.pop("releases"),
        "missing 'rho_spent'": lambda r: r.pop("rho_spent"),
        "lists no measurements": lambda r: r.update(releases=[]),
        "add up to": lambda r: r.update(rho_spent=r["rho_spent"] * 0.5),
        "lacks ['sigma']": lambda r: r["releases"][0].pop("sigma"),
        "neighbouring_relation is": lambda r: r.update(neighbouring_relation="replace one row"),
        "epsilon_spent is not the conversion": lambda r: r.update(epsilon_spent=r["epsilon_spent"] / 2),
    }
    for fragment, tamper in cases.items():
        broken = json.loads(json.dumps(report))
        tamper(broken)
        with pytest.raises(UserInputError, match="incomplete privacy report") as info:
            check_privacy_report(broken)
        assert fragment in str(info.value), fragment
    with pytest.raises(UserInputError, match="has no privacy report"):
        check_privacy_report(None)


# ---- release refusals --------------------------------------------------------------------------------
@pytest.mark.parametrize("case", ["no_report", "tampered_report", "no_model", "unknown_run"])
def test_release_refuses_runs_without_a_complete_privacy_report(case, store, prefix, capsys):
    synth = fitted()
    name = f"refused_{uuid.uuid4().hex[:6]}"
    if case == "unknown_run":
        run_id, fragment = "0" * 32, "no MLflow run with id"
    else:
        with mlflow_run("not releasable") as run:
            if case == "tampered_report":
                from spark_synth.track import log_synthesizer_model

                report = dict(synth.privacy_report_.to_dict(), releases=synth.privacy_report_.to_dict()["releases"][:-1])
                mlflow.log_dict(report, "privacy_report.json")
                log_synthesizer_model(synth, source=SOURCE)
                fragment = "incomplete privacy report (the measurements' rho add up to"
            elif case == "no_model":
                mlflow.log_dict(synth.privacy_report_.to_dict(), "privacy_report.json")
                fragment = "has no spark-synth model"
            else:
                mlflow.log_param("engine", "independent")
                fragment = "has no privacy report"
        run_id = run.info.run_id
    code, out, err = cli(capsys, "release", "--run-id", run_id, "--name", name, "--ledger-prefix", prefix)
    assert code == 2 and out == ""
    assert fragment in error_line(err)
    assert store.search_model_versions(f"name = '{name}'") == []
    assert BudgetLedger(SOURCE, prefix=prefix).entries() == []


# ---- the cumulative budget ---------------------------------------------------------------------------
def test_cumulative_budget_is_recorded_shown_and_capped(store, prefix, capsys):
    first, second = fitted(seed=1), fitted(seed=2)
    run_a, run_b = logged_run(first), logged_run(second)
    name = f"customers_{uuid.uuid4().hex[:6]}"

    code, out, err = cli(capsys, "release", "--run-id", run_a, "--name", name, "--budget-cap", "1.2",
                         "--ledger-prefix", prefix)
    assert code == 0, err
    one = json.loads(out)
    rho_a = first.privacy_report_.rho_spent
    assert (one["version"], one["model_uri"], one["source_table"]) == ("1", f"models:/{name}/1", SOURCE)
    assert one["cumulative"] == {"rho": rho_a, "epsilon": epsilon_from_rho(rho_a, 1e-9), "delta": 1e-9, "releases": 1,
                                 "cap_epsilon": 1.2, "cap_delta": 1e-9}
    assert one["cumulative"]["epsilon"] == pytest.approx(1.0, rel=1e-9)

    # the same fit under another name publishes nothing new: no extra spend
    code, out, err = cli(capsys, "release", "--run-id", run_a, "--name", name + "_copy", "--ledger-prefix", prefix)
    assert code == 0, err
    assert json.loads(out)["cumulative"]["rho"] == rho_a

    # a second fit of the same table would reach epsilon ~1.44 > 1.2: refused, nothing registered
    code, out, err = cli(capsys, "release", "--run-id", run_b, "--name", name, "--ledger-prefix", prefix)
    assert code == 2 and out == "" and "\n" not in err
    assert f"source table '{SOURCE}' budget cap exceeded" in err and "cap epsilon=1.2 at delta=1e-09" in err
    assert "already spent epsilon=1" in err and "--budget-cap" in err
    assert [str(v.version) for v in store.search_model_versions(f"name = '{name}'")] == ["1"]

    code, out, err = cli(capsys, "budget", "--source-table", SOURCE, "--ledger-prefix", prefix)
    shown = json.loads(out)
    assert code == 0 and [r["fit_run_id"] for r in shown["releases"]] == [run_a, run_a]
    assert shown["cumulative"]["rho"] == rho_a and shown["cap"]["epsilon"] == 1.2
    assert shown["cap"]["rho_left"] == pytest.approx(rho_from_epsilon(1.2, 1e-9) - rho_a)

    # under a raised cap the second fit is admitted and the cumulative spend is ρ_a + ρ_b
    code, out, err = cli(capsys, "release", "--run-id", run_b, "--name", name, "--budget-cap", "2",
                         "--ledger-prefix", prefix)
    assert code == 0, err
    two = json.loads(out)
    rho_total = math.fsum([rho_a, second.privacy_report_.rho_spent])
    assert two["version"] == "2" and two["cumulative"]["rho"] == rho_total
    assert two["cumulative"]["epsilon"] == epsilon_from_rho(rho_total, 1e-9) < 2.0
    tags = store.get_model_version(name, "2").tags
    assert tags["spark_synth.cumulative_epsilon"] == repr(two["cumulative"]["epsilon"])
    assert tags["spark_synth.budget_cap_epsilon"] == "2.0" and tags["spark_synth.fit_run_id"] == run_b


def test_version_tags_carry_privacy_metadata_and_evaluation_metrics(store, prefix, tmp_path):
    synth = fitted()
    run_id = logged_run(synth)
    store.log_metric(run_id, "eval_marginal_tvd_mean", 0.042)  # what `spark-synth evaluate` logs
    metrics = tmp_path / "metrics.json"
    metrics.write_text(json.dumps({"utility": {"tstr_auc": 0.81}, "label": "not a number"}))
    name = f"tagged_{uuid.uuid4().hex[:6]}"
    summary = release(run_id, name, metrics=metrics, ledger_prefix=prefix)
    tags = store.get_model_version(name, summary["version"]).tags
    report = synth.privacy_report_
    assert tags["spark_synth.epsilon"] == repr(report.epsilon_spent) and tags["spark_synth.delta"] == "1e-09"
    assert tags["spark_synth.rho"] == repr(report.rho_spent)
    assert tags["spark_synth.neighbouring_relation"] == "add/remove one row"
    assert tags["spark_synth.sampling_spends_budget"] == "false" and "schema is public" in tags["spark_synth.guarantee"]
    assert tags["spark_synth.fit_id"] == report.fit_id
    # evaluation reads real rows: its metrics are tagged apart from the guarantee, as not private
    assert tags["not_private.eval_marginal_tvd_mean"] == "0.042" and tags["not_private.eval_utility.tstr_auc"] == "0.81"
    assert "NOT covered" in tags["not_private.evaluation"]
    assert not any("eval" in key for key in tags if key.startswith("spark_synth."))
    assert not any("label" in key for key in tags)
    assert tags["spark_synth.source_table"] == SOURCE and tags["spark_synth.engine"] == "independent"


def test_a_fit_outside_the_dp_guarantee_is_labelled_and_released_only_when_allowed(store, prefix, capsys):
    synth = fitted(not_covered="dgm validator=real: random forest trained on real rows")
    report = synth.privacy_report_
    assert not report.dp_guarantee and report.to_dict()["dp_guarantee"] is False
    assert check_privacy_report(report.to_dict()).dp_guarantee is False  # the label survives the JSON round trip
    run_id = logged_run(synth)
    run_tags = store.get_run(run_id).data.tags
    assert run_tags["spark_synth.dp"] == "false" and "random forest" in run_tags["spark_synth.not_covered_by_dp"]
    name = f"non_dp_{uuid.uuid4().hex[:6]}"
    code, out, err = cli(capsys, "release", "--run-id", run_id, "--name", name, "--ledger-prefix", prefix)
    assert code == 2 and out == "" and "NOT covered by the DP guarantee" in err and "--allow-non-dp" in err
    assert store.search_model_versions(f"name = '{name}'") == []
    code, out, err = cli(capsys, "release", "--run-id", run_id, "--name", name, "--ledger-prefix", prefix, "--allow-non-dp")
    assert code == 0, err
    tags = store.get_model_version(name, json.loads(out)["version"]).tags
    assert tags["spark_synth.dp"] == "false" and tags["spark_synth.guarantee"].startswith("NOT covered by a DP guarantee")
    covered = logged_run(fitted(seed=3))
    assert store.get_run(covered).data.tags["spark_synth.dp"] == "true"


def test_pending_releases_count_and_failed_ones_do_not(store, prefix):
    """Record-then-verify: a release in progress holds its share; one that fails releases it."""
    a, b = fitted(seed=3), fitted(seed=4)
    run_b = logged_run(b)
    ledger = BudgetLedger(SOURCE, prefix=prefix)
    ledger.set_cap(1.2, 1e-9)
    report = a.privacy_report_
    with ledger.reserve(fit_run_id="pending-fit", rho=report.rho_spent, epsilon=report.epsilon_spent,
                        delta=report.delta, model="m") as pending:
        assert pending.cumulative["releases"] == 1
        with pytest.raises(BudgetExhausted, match="budget cap exceeded"):
            release(run_b, f"racing_{uuid.uuid4().hex[:6]}", ledger_prefix=prefix)
        pending.confirm("7")
    assert [e.fit_run_id for e in ledger.entries()] == ["pending-fit"]

    with pytest.raises(RuntimeError):
        with ledger.reserve(fit_run_id="doomed", rho=0.001, epsilon=0.1, delta=1e-9, model="m"):
            raise RuntimeError("registry unavailable")
    assert [e.fit_run_id for e in ledger.entries()] == ["pending-fit"]


def test_bad_caps_are_named(store, prefix, capsys):
    code, _, err = cli(capsys, "budget", "--source-table", SOURCE, "--budget-cap", "-1", "--cap-delta", "1e-9",
                       "--ledger-prefix", prefix)
    assert code == 2 and "'budget cap epsilon (--budget-cap)' must be a finite number > 0" in err
    code, _, err = cli(capsys, "budget", "--source-table", SOURCE, "--budget-cap", "1", "--ledger-prefix", prefix)
    assert code == 2 and "'cap delta (--cap-delta)'" in err


def test_databricks_uses_the_workspace_store_and_shared_ledgers(monkeypatch, tmp_path):
    from spark_synth.track import default_tracking_uri, on_databricks
    from spark_synth.track.ledger import default_prefix

    monkeypatch.delenv("MLFLOW_TRACKING_URI", raising=False)
    monkeypatch.delenv("SPARK_SYNTH_LEDGER_PREFIX", raising=False)
    monkeypatch.delenv("DATABRICKS_RUNTIME_VERSION", raising=False)
    assert not on_databricks() and default_tracking_uri(tmp_path) == f"sqlite:///{tmp_path / 'mlflow.db'}"
    assert default_prefix() == "spark-synth-budget:"
    monkeypatch.setenv("DATABRICKS_RUNTIME_VERSION", "15.4")
    assert default_tracking_uri(tmp_path) == "databricks"
    assert BudgetLedger("main.sales.customers").experiment_name == "/Shared/spark-synth-budget-main.sales.customers"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", "http://mlflow:5000")
    assert default_tracking_uri(tmp_path) == "http://mlflow:5000"


# ---- aliases (MLflow's replacement for the deprecated stages) ------------------------------------------
def test_release_alias_points_at_the_new_version_and_moves_with_the_next(store, prefix, capsys):
    first, second = logged_run(fitted(seed=5)), logged_run(fitted(seed=6))
    name = f"aliased_{uuid.uuid4().hex[:6]}"
    code, out, err = cli(capsys, "release", "--run-id", first, "--name", name, "--alias", "champion", "--ledger-prefix", prefix)
    assert code == 0, err
    one = json.loads(out)
    assert (one["version"], one["alias"], one["alias_uri"]) == ("1", "champion", f"models:/{name}@champion")
    assert str(store.get_model_version_by_alias(name, "champion").version) == "1"
    code, out, err = cli(capsys, "release", "--run-id", second, "--name", name, "--alias", "champion",
                         "--budget-cap", "3", "--ledger-prefix", prefix)
    assert code == 0, err
    assert json.loads(out)["version"] == "2" and str(store.get_model_version_by_alias(name, "champion").version) == "2"
    assert {k: str(v) for k, v in store.get_registered_model(name).aliases.items()} == {"champion": "2"}
    assert json.loads(cli(capsys, "release", "--run-id", first, "--name", name + "_b", "--ledger-prefix", prefix)[1])["alias"] is None


@pytest.mark.parametrize("alias", ["latest", "Latest", "v2", "V10", "two words", "", "x" * 256, "champion!"])
def test_bad_aliases_are_refused_before_anything_is_released(store, prefix, capsys, alias):
    run_id = logged_run(fitted(seed=7))
    name = f"bad_alias_{uuid.uuid4().hex[:6]}"
    code, out, err = cli(capsys, "release", "--run-id", run_id, "--name", name, "--alias", alias, "--ledger-prefix", prefix)
    assert code == 2 and out == "" and "\n" not in err
    assert err.startswith("spark-synth: error: parameter 'alias (--alias)' must be 1 to 255 letters, digits")
    assert store.search_model_versions(f"name = '{name}'") == []
    assert BudgetLedger(SOURCE, prefix=prefix).entries() == []
