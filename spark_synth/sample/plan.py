"""What each sampling task draws: the model, conditioned on a ``--where`` condition, split into ``--rows-per`` strata.

:func:`sampling_plan` runs on the driver: it conditions the model (exactly, per engine:
:meth:`~spark_synth.engines.FittedModel.conditioned`), refuses a condition the model gives no
probability, and for ``--rows-per COLUMN`` gives each of the column's values round(N · P(value |
condition)) of the N rows (largest remainders, so they add up to N). Row ids 0..N-1 are laid out
stratum by stratum, so a Spark task knows each of its rows' stratum from the row id alone and
conditions the model on it once per stratum it meets. Post-processing of the model: no budget.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engines import FittedModel
from ..engines.evidence import SMALLEST_PROBABILITY, Evidence
from ..logs import layer
from ..schema import Schema, decode_codes
from .conditions import Condition, ConditionError

_log = layer("sample")


@dataclass
class SamplingPlan:
    """The model each row is drawn from (conditioned on ``evidence``), the numeric sets decoding draws
    inside, the condition's model probability; ``strata``: None, or for ``--rows-per`` (the column's
    position, its number of codes, the first row id of each code's rows)."""

    model: FittedModel
    evidence: Evidence
    within: dict
    probability: float = 1.0
    strata: tuple[int, int, np.ndarray] | None = None
    where: str | None = None
    rows_per: str | None = None

    @property
    def description(self) -> str:
        """", where …, rows per …" for progress lines ("" for a plain sample)."""
        return (f", where {self.where}" if self.where else "") + (f", rows per {self.rows_per}" if self.rows_per else "")

    def summary(self) -> dict:
        """The JSON line's account of a shaped sample ({} for a plain one)."""
        if self.where is None and self.rows_per is None:
            return {}
        out = {"where": self.where, "rows_per": self.rows_per}
        if self.where is not None:
            out["condition_probability"] = self.probability
        return out

    def stratum_model(self, code: int, cache: dict) -> FittedModel:
        """The model conditioned on the plan's evidence and on its stratum column having ``code``."""
        if code not in cache:
            j, size, _ = self.strata
            cache[code] = self.model.conditioned(self.evidence.and_code(j, code, size))[0]
        return cache[code]

    def frame(self, ids: np.ndarray, schema: Schema, rng: np.random.Generator, counted: bool, cache: dict):
        """Decoded rows for ``ids`` (typed values inside the condition) and the sampling counters."""
        codes, counts = self.sample_counted(ids, rng, counted, cache)
        return decode_codes(codes, schema, rng, self.within), counts

    def sample_counted(self, ids: np.ndarray, rng: np.random.Generator, counted: bool, cache: dict):
        """Codes for rows ``ids`` (a task's batch) and the model's sampling counters over them."""
        if self.strata is None:
            if counted:
                return self.model.sample_counted(len(ids), rng)
            return self.model.sample_codes(len(ids), rng), {}
        codes, counts = [], {}
        stratum = np.searchsorted(self.strata[2], ids, side="right") - 1
        for code in np.unique(stratum):
            model = self.stratum_model(int(code), cache)
            n = int((stratum == code).sum())
            drawn, found = model.sample_counted(n, rng) if counted else (model.sample_codes(n, rng), {})
            codes.append(drawn)
            for name, value in found.items():
                counts[name] = counts.get(name, 0) + int(value)
        return np.concatenate(codes), counts


def sampling_plan(model: FittedModel, schema: Schema, n_rows: int, condition: Condition | None = None,
                  rows_per: str | None = None) -> SamplingPlan:
    """The plan of an ``n_rows`` sample under ``condition`` and ``rows_per`` (either may be None)."""
    evidence = condition.evidence() if condition is not None else Evidence({})
    where = f"--where {condition.text!r}" if condition is not None else f"--rows-per {rows_per!r}"
    strata = None
    if rows_per is None:
        drawn, probability = (model, 1.0) if not evidence else model.conditioned(evidence)
    else:  # each stratum is conditioned in the tasks; the strata's probabilities add up to the condition's
        j = stratum_column(rows_per, schema)
        size = schema.columns[j].size
        shares = np.array([model.conditioned(evidence.and_code(j, code, size))[1] for code in range(size)])
        drawn, probability = model, float(shares.sum()) if evidence else 1.0
        _check_probability(float(shares.sum()), where)
        counts = _largest_remainders(n_rows, shares / shares.sum())
        strata = (j, size, np.concatenate([[0], np.cumsum(counts)[:-1]]).astype(np.int64))
    if evidence:
        _check_probability(probability, where)
        expected = probability * float(getattr(model, "estimated_rows", 0) or 0)
        _log.info("sample: %s has model probability %.3g (about %.3g rows of a table the real table's size)",
                  where, probability, expected)
    return SamplingPlan(drawn, evidence, dict(condition.numbers) if condition else {}, probability, strata,
                        where=condition.text if condition is not None else None, rows_per=rows_per)


def _check_probability(probability: float, where: str) -> None:
    if not probability > SMALLEST_PROBABILITY:
        raise ConditionError(f"{where}: the model gives this condition probability {probability:.3g} (at most "
                             f"{SMALLEST_PROBABILITY:g}): it holds no rows that satisfy it. Widen the condition, or check "
                             "it against the model's marginals (e.g. `spark-synth evaluate`)")


def stratum_column(name: str, schema: Schema) -> int:
    """The position of ``--rows-per``'s column, refused unless the schema has it and it is categorical."""
    names = list(schema.names)
    if name not in names:
        raise ConditionError(f"--rows-per: the schema has no column {name!r}; its columns are {', '.join(names)}")
    column = schema.columns[names.index(name)]
    if not column.type.is_discrete:
        raise ConditionError(f"--rows-per {name!r}: a {column.type.value} column has no values to give rows to; "
                             "name a categorical, integer-category or boolean column")
    return names.index(name)


def _largest_remainders(n: int, shares: np.ndarray) -> np.ndarray:
    """Whole counts ∝ ``shares`` adding up to ``n`` (Hamilton's method)."""
    exact = n * shares
    counts = np.floor(exact).astype(np.int64)
    counts[np.argsort(-(exact - counts), kind="stable")[:n - int(counts.sum())]] += 1
    return counts
