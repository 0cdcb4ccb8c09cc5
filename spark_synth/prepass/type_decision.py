"""The type of a CSV column (text, type not declared) from the noisy counts of the kinds of its values:
post-processing of the pre-pass's DP kind counts."""

from __future__ import annotations

import math

import numpy as np

from ..measure.profile import FRACTIONAL as FRACTIONAL_VALUES
from ..measure.profile import ISO_DATE, KINDS, OTHER, OTHER_NUMBER, OTHER_WHOLE, TEXT, TRUE_FALSE, WHOLE, ZERO_ONE

#: A CSV column is numeric when at most this share of its (noisy) values is not a number,
#: and integer when at most INTEGER_SLACK of its numbers are not whole.
TEXT_SLACK, INTEGER_SLACK = 0.05, 0.01
#: The type decision allows this many σ of noise above each slack (at most half the values).
DECIDE_Z = 4.0


def _decide_kinds(noisy: np.ndarray, sigma: float) -> tuple[str, bool]:
    """Post-processing of the noisy kind counts (:data:`~spark_synth.measure.profile.KINDS`, noise σ
    each; NaN for a kind not counted): ``(type, zero_one)``.

    boolean when at most TEXT_SLACK of the values are not true/false; date when at most TEXT_SLACK
    are not ISO dates; integer / continuous when at most TEXT_SLACK are not numbers (integer when at
    most INTEGER_SLACK of the numbers are not whole; ``zero_one`` when also at most INTEGER_SLACK of
    the whole numbers are not 0 or 1); categorical otherwise. Each share allows DECIDE_Z times the σ
    of the noisy sum it compares (σ√k for k counts) on top, but never more than half: a table whose
    noise swamps the slack decides by majority."""
    noisy = np.asarray(noisy, dtype=np.float64)
    counted = ~np.isnan(noisy)
    c = np.where(counted, np.maximum(noisy, 0.0), 0.0)

    def within(outside: list[int], share: float, total: float) -> bool:
        k = int(counted[outside].sum())
        return float(c[outside].sum()) <= min(share * total + DECIDE_Z * sigma * math.sqrt(k), 0.5 * total)

    everything = list(range(len(KINDS)))
    total = float(c.sum())
    for kind, index in (("boolean", TRUE_FALSE), ("date", ISO_DATE)):
        if c[index] > 0 and within([i for i in everything if i != index], TEXT_SLACK, total):
            return kind, False
    numbers = float(c[[ZERO_ONE, OTHER_WHOLE, OTHER_NUMBER]].sum())
    if numbers <= 0 or not within([ISO_DATE, TRUE_FALSE, TEXT], TEXT_SLACK, total):
        return "categorical", False
    if not within([OTHER_NUMBER], INTEGER_SLACK, numbers):
        return "continuous", False
    whole = float(c[[ZERO_ONE, OTHER_WHOLE]].sum())
    return "integer", bool(c[ZERO_ONE] > 0 and within([OTHER_WHOLE], INTEGER_SLACK, whole))


def _decide(noisy: np.ndarray, sigma: float) -> str:
    """:func:`_decide_kinds` on three noisy counts — whole numbers, other numbers, non-numbers —
    (the split of ``ColumnProfile.classes``): categorical, integer or continuous."""
    whole, fractional, other = (float(v) for v in np.asarray(noisy, dtype=np.float64)[[WHOLE, FRACTIONAL_VALUES, OTHER]])
    kinds = np.full(len(KINDS), np.nan)
    kinds[[OTHER_WHOLE, OTHER_NUMBER, TEXT]] = whole, fractional, other
    return _decide_kinds(kinds, sigma)[0]
