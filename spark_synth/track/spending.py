"""Every spend goes through a ledger: the charge of one fit, made around it, and the warning for a
fit that no ledger records.

:func:`fit_charge` is what ``Synthesizer.fit(df, schema, dataset_id=...)`` does — and so ``spark-synth
run``/``fit``, the jobs, the notebooks and DGM's partitions (one oracle, one fit): before a row is read
it records a schema's DP pre-pass in the table's ledger when that ledger does not hold it yet (spent
already: never refused), then reserves the fit's requested ρ (refused past the cap: nothing read). The
fit binds the reservation as soon as noise is drawn and settles it to the ρ it spent, so the entry is
FINISHED before the fitted synthesizer reaches the caller. Without a dataset id nothing is recorded
and :func:`warn_unrecorded` says so, once per table and process.
"""

from __future__ import annotations

import warnings
from contextlib import contextmanager
from urllib.parse import unquote, urlparse

from ..errors import UnrecordedSpendWarning
from .ledger import FIT, BudgetLedger, Charge, store_location

_WARNED: set[str] = set()


@contextmanager
def fit_charge(dataset_id: str, *, fit_id: str, rho: float, epsilon: float, delta: float, prepass=None, unit=None):
    """Reserve fit ``fit_id`` in the ledger of ``dataset_id`` (see the module docstring), under privacy
    unit ``unit`` (a :class:`~spark_synth.privacy.unit.PrivacyUnit`; None: one row); yields the
    :class:`~spark_synth.track.ledger.Charge`. The store is the active MLflow run's, else spark-synth's."""
    import mlflow

    from .mlflow_tracking import use_store

    run = mlflow.active_run()
    if run is None:
        use_store()
    fit_run_id = run.info.run_id if run is not None else ""
    ledger = BudgetLedger(dataset_id)
    if prepass is not None:
        ledger.record_prepass(prepass, fit_run_id)
    with ledger.reserve(kind=FIT, fit_id=fit_id, fit_run_id=fit_run_id, rho=rho, epsilon=epsilon, delta=delta,
                        unit=unit.ledger_key if unit is not None else "",
                        rows_per_unit=unit.max_rows if unit is not None else 1) as charge:
        yield charge


def charged(charge: Charge) -> dict:
    """Where a fit was charged and the table's total after it, under the fit's privacy unit (the
    ``ledger`` of the CLI's JSON line)."""
    total = charge.cumulative
    return {"dataset_id": charge.ledger.source, "ledger_experiment": charge.ledger.experiment_name,
            "store": store_location(), "cumulative_rho": total["rho"], "cumulative_epsilon": total["epsilon"],
            "cumulative_delta": total["delta"], **({"privacy_unit": charge.entry.unit} if charge.entry.unit else {}),
            **({"unbounded_entries": total["unbounded_entries"]} if total.get("unbounded_entries") else {})}


def warn_unrecorded(df, epsilon: float, rho: float, delta: float) -> None:
    """Warn (once per table and process) that a fit of ``df`` spent budget no ledger records."""
    source = describe_source(df)
    key = source or "a DataFrame"
    if key in _WARNED:
        return
    _WARNED.add(key)
    what = f"table {source}" if source else "a DataFrame of unknown source"
    warnings.warn(
        f"Synthesizer.fit spent epsilon={epsilon:g} (rho={rho:.6g}) at delta={delta:g} on {what} and no budget ledger "
        f"records it: `spark-synth budget` does not count it. Pass dataset_id=<the table's name or path"
        f"{f', e.g. {source!r}' if source else ''}> to fit to charge the table's ledger (in spark-synth's MLflow store, "
        "as `spark-synth run` does), or filter spark_synth.errors.UnrecordedSpendWarning if you account for it elsewhere. "
        "Shown once per table.", UnrecordedSpendWarning, stacklevel=3)


def describe_source(df) -> str | None:
    """The path a DataFrame was read from — its one file, or its files' common folder — or None.
    File names only (public metadata); a local ``file:`` URI is given as a plain path."""
    try:
        files = [str(f) for f in df.inputFiles()]
    except Exception:  # noqa: BLE001 (a plan without files, or a session that cannot list them)
        return None
    if not files:
        return None
    paths = [unquote(urlparse(f).path) if f.startswith("file:") else f for f in files]
    if len(set(paths)) == 1:
        return paths[0]
    first, last = min(paths), max(paths)
    common = 0
    while common < min(len(first), len(last)) and first[common] == last[common]:
        common += 1
    folder = first[:common].rsplit("/", 1)[0]
    return folder or None
