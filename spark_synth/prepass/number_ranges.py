"""The public ranges of numbers the numeric bounds count on: the grid of octave edges and their
eighths, the octaves by sign and power of two, and exact counts of a range from a column's profile."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ..errors import InternalError

#: Octaves of the numeric bounds: magnitudes from 2^K_MIN (≈ 6.1e-5) to 2^K_MAX (≈ 9.0e15, the
#: largest power of two below which float64 holds every integer); values beyond are clipped to ±2^K_MAX.
K_MIN, K_MAX = -14, 53
#: Equal parts of an octave that the fine stage resolves (2^k·(1 + j/8), j = 0..7).
SUB_STEPS = 8


def candidate_grid() -> np.ndarray:
    """The public grid the exact pass counts numbers on: 0 and ±2^k·(1 + j/8) (k = K_MIN..K_MAX−1,
    j = 0..SUB_STEPS−1), and ±2^K_MAX — every octave edge and every edge of its eighths."""
    magnitudes = [2.0**k * (SUB_STEPS + j) / SUB_STEPS for k in range(K_MIN, K_MAX) for j in range(SUB_STEPS)]
    magnitudes.append(2.0**K_MAX)
    return np.asarray(sorted({0.0, *magnitudes, *(-m for m in magnitudes)}), dtype=np.float64)


GRID = candidate_grid()


@dataclass(frozen=True)
class Range:
    """A public range of numbers: ``(lo, hi]`` above zero (``side`` +1), ``[lo, hi)`` below it (−1),
    or ``{0}`` (0); ``lo`` / ``hi`` are ∓inf for the ranges beyond ±2^K_MAX."""

    lo: float
    hi: float
    side: int

    @property
    def octave(self) -> bool:
        """Whether it is an octave ±(2^k, 2^(k+1)] with K_MIN ≤ k < K_MAX (the fine stage splits those)."""
        return self.side != 0 and self.lo != 0 and self.hi != 0 and math.isfinite(self.lo) and math.isfinite(self.hi)

    def holds_integer(self) -> bool:
        if self.side == 0:
            return True
        if self.side > 0:
            return math.isinf(self.hi) or math.floor(self.hi) > self.lo
        return math.isinf(self.lo) or math.ceil(self.lo) < self.hi

    def low(self, integer: bool) -> float:
        """The least value of the range (the least whole one for ``integer``); −2^K_MAX beyond the grid."""
        if self.side == 0:
            return 0.0
        if math.isinf(self.lo):
            return -(2.0**K_MAX)
        if integer:
            return float(math.floor(self.lo) + 1 if self.side > 0 else math.ceil(self.lo))
        return self.lo

    def high(self, integer: bool) -> float:
        """The greatest value of the range (the greatest whole one for ``integer``); 2^K_MAX beyond the grid."""
        if self.side == 0:
            return 0.0
        if math.isinf(self.hi):
            return 2.0**K_MAX
        if integer:
            return float(math.floor(self.hi) if self.side > 0 else math.ceil(self.hi) - 1)
        return self.hi

    def parts(self) -> list["Range"]:
        """An octave's SUB_STEPS equal parts, in increasing order (grid points, exactly)."""
        base = min(abs(self.lo), abs(self.hi))
        if self.side > 0:
            edges = [base * (SUB_STEPS + j) / SUB_STEPS for j in range(SUB_STEPS + 1)]
        else:
            edges = [-base * (2 * SUB_STEPS - j) / SUB_STEPS for j in range(SUB_STEPS + 1)]
        return [Range(a, b, self.side) for a, b in zip(edges[:-1], edges[1:])]


def octave_ranges() -> tuple[Range, ...]:
    """The coarse stage's public ranges, in increasing order: below −2^K_MAX, the octaves
    [−2^(k+1), −2^k), [−2^K_MIN, 0), {0}, (0, 2^K_MIN], the octaves (2^k, 2^(k+1)], above 2^K_MAX."""
    below = [Range(-math.inf, -(2.0**K_MAX), -1)]
    below += [Range(-(2.0 ** (k + 1)), -(2.0**k), -1) for k in range(K_MAX - 1, K_MIN - 1, -1)]
    below.append(Range(-(2.0**K_MIN), 0.0, -1))
    above = [Range(0.0, 2.0**K_MIN, 1)] + [Range(2.0**k, 2.0 ** (k + 1), 1) for k in range(K_MIN, K_MAX)]
    above.append(Range(2.0**K_MAX, math.inf, 1))
    return (*below, Range(0.0, 0.0, 0), *above)


OCTAVES = octave_ranges()


class _RangeCounts:
    """Exact counts of public ranges from a column's profile on :data:`GRID` (cells and ties)."""

    def __init__(self, profile):
        self.at_most = np.cumsum(profile.grid)[: GRID.size]  # #{x <= GRID[i]}
        self.below = self.at_most - profile.ties  # #{x < GRID[i]}
        self.n = int(profile.grid.sum())

    @staticmethod
    def _index(x: float) -> int:
        i = int(np.searchsorted(GRID, x))
        if i >= GRID.size or GRID[i] != x:
            raise InternalError(f"{x!r} is not a point of the pre-pass grid")
        return i

    def __call__(self, r: Range) -> int:
        if r.side == 0:
            i = self._index(0.0)
            return int(self.at_most[i] - self.below[i])
        if r.side > 0:
            top = self.n if math.isinf(r.hi) else self.at_most[self._index(r.hi)]
            return int(top - self.at_most[self._index(r.lo)])
        bottom = 0 if math.isinf(r.lo) else self.below[self._index(r.lo)]
        return int(self.below[self._index(r.hi)] - bottom)
