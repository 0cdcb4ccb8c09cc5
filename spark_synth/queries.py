"""Queries: public, data-independent descriptions of the statistics an engine may ask for.

Every query describes itself — its kind (the measure layer answers each kind, see
:mod:`spark_synth.measure.answers`), the shape of its answer over a schema, and its sensitivity
under the add/remove-one-row neighbouring relation — so the privacy layer can calibrate noise
without knowing what the query is. Answers are integer vectors, in units of ``1 / unit`` (1 for
counts; 2^-bits for fixed-point sums). Queries hold only public information (column names,
directions, knots made from earlier DP releases). No Spark, no torch.

A new kind of query is a subclass of :class:`Query` plus one answerer registered in the measure
layer; nothing else changes.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import ClassVar

import numpy as np

from .errors import ParameterError


class Query(ABC):
    """A public statistic whose exact answer is an integer array (in units of ``1 / unit``)."""

    #: The measure layer's registry key for this kind of query.
    kind: ClassVar[str]
    name: str

    @abstractmethod
    def answer_shape(self, schema) -> tuple[int, ...]:
        """Shape of the answer array over ``schema``'s public domain."""

    @property
    @abstractmethod
    def l2_sensitivity(self) -> float:
        """Largest ℓ2 change of the answer (real units) when one row is added or removed."""

    @property
    @abstractmethod
    def l1_sensitivity(self) -> float:
        """Largest ℓ1 change of the answer (real units) when one row is added or removed."""

    @property
    def unit(self) -> float:
        """How many integer units make one real unit (answers are integers)."""
        return 1.0

    @property
    def integer_l2_sensitivity(self) -> int:
        """ℓ2 sensitivity in integer units, rounded UP (what the discrete Gaussian is calibrated to)."""
        return int(math.ceil(self.l2_sensitivity * self.unit))

    @abstractmethod
    def describe(self) -> str:
        """One line for the privacy report (public)."""


@dataclass(frozen=True)
class MarginalQuery(Query):
    """The histogram of ``columns`` over their public codes (nulls and clipped values included).

    ``groupings`` (optional, public) maps a column's codes to coarser groups — ``groupings[k][code]``
    is the group of that code of ``columns[k]``, groups numbered 0..G−1, ``None`` keeps the codes —
    so the counts are over groups: a hierarchy level, or numeric bins merged into wider ranges.
    """

    kind: ClassVar[str] = "marginal"
    columns: tuple[str, ...]
    name: str = field(default="", compare=False)
    groupings: tuple | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "columns", tuple(self.columns))
        if self.groupings is not None:
            groupings = tuple(None if g is None else tuple(int(v) for v in g) for g in self.groupings)
            if len(groupings) != len(self.columns):
                raise ValueError(f"marginal over {self.columns}: one grouping (or None) per column")
            object.__setattr__(self, "groupings", None if all(g is None for g in groupings) else groupings)
        if not self.name:
            coarse = [f"{c}/{max(g) + 1}" if g else c for c, g in zip(self.columns, self.groupings or [None] * len(self.columns))]
            object.__setattr__(self, "name", f"marginal[{', '.join(coarse)}]")

    def answer_shape(self, schema) -> tuple[int, ...]:
        sizes = tuple(schema[c].size for c in self.columns)
        if self.groupings is None:
            return sizes
        shape = []
        for column, size, groups in zip(self.columns, sizes, self.groupings):
            if groups is None:
                shape.append(size)
                continue
            if len(groups) != size or min(groups) < 0 or set(groups) != set(range(max(groups) + 1)):
                raise ValueError(f"grouping of column {column!r} must map its {size} codes onto groups 0..G-1, each used")
            shape.append(max(groups) + 1)
        return tuple(shape)

    @property
    def l2_sensitivity(self) -> float:
        """One row falls in exactly one cell: adding or removing it changes one count by 1."""
        return 1.0

    @property
    def l1_sensitivity(self) -> float:
        return 1.0

    def describe(self) -> str:
        return f"counts over ({', '.join(self.columns)})"

    def coarsen(self, finer: "MarginalQuery", answer: np.ndarray, schema) -> np.ndarray | None:
        """This query's answer summed from ``finer``'s (same columns, every group of ``finer`` inside
        one group of this query), or None when this query is not such a coarsening of ``finer``."""
        if not isinstance(finer, MarginalQuery) or finer.columns != self.columns:
            return None
        mine, theirs = self.groupings or (None,) * len(self.columns), finer.groupings or (None,) * len(self.columns)
        maps = []
        for column, to_group, from_group in zip(self.columns, mine, theirs):
            size = schema[column].size
            to_group = np.arange(size) if to_group is None else np.asarray(to_group)
            from_group = np.arange(size) if from_group is None else np.asarray(from_group)
            n_from = int(from_group.max()) + 1
            parent = np.full(n_from, -1)
            parent[from_group] = to_group
            if np.any(parent[from_group] != to_group):
                return None  # a finer group is split between two of this query's groups
            maps.append(parent)
        out = np.asarray(answer)
        for axis, parent in enumerate(maps):
            moved = np.moveaxis(out, axis, 0)
            summed = np.zeros((int(parent.max()) + 1,) + moved.shape[1:], dtype=out.dtype)
            np.add.at(summed, parent, moved)
            out = np.moveaxis(summed, 0, axis)
        return out


#: Default public bound on the rows one moment query is summed over; it sizes the fixed point.
DEFAULT_MAX_ROWS = 10**12
#: Most fraction bits a moment query may use (a chunk of 2^13 rows then sums within 2^62 exactly).
MAX_FRACTION_BITS = 48


def fraction_bits_for(max_rows: int) -> int:
    """The largest b with max_rows · 2^b ≤ 2^62, i.e. floor(62 − log2(max_rows × 1)) for the largest
    per-row entry |T_1(z)| ≤ 1 (2^b in units), capped at :data:`MAX_FRACTION_BITS`. Public."""
    if isinstance(max_rows, bool) or not isinstance(max_rows, int) or not 1 <= max_rows <= 2**61:
        raise ParameterError("max_rows", "a whole number in [1, 2^61] (a public bound on the row count)", max_rows)
    return min(MAX_FRACTION_BITS, 62 - (max_rows - 1).bit_length())


@dataclass(frozen=True, eq=False)
class MomentQuery(Query):
    """Sliced Chebyshev moment sums: S[l, j] = Σ_rows T_j(w_lᵀ x) / √j for j = 1..degree.

    ``directions`` is an (L, D) matrix over the public embedding of
    :class:`~spark_synth.schema.embedding.Embedding`, already scaled so that |w_lᵀ x| ≤ 1 for
    every possible row. Sums are accumulated in fixed point (each row's entry rounded to the nearest
    multiple of 2^-fraction_bits), so each row contributes at most 1/√j + 2^-(bits+1) per entry.
    By default ``fraction_bits`` is derived from the public bound ``max_rows`` (10^12 rows: 22
    bits), so the sums stay exact up to that many rows; each released sum is clamped to ±2^62 as a
    safety net (clamping is 1-Lipschitz, so it cannot raise the sensitivity).

    ``value_knots`` (column name → images of its public bin edges in [-1, 1]) replaces the affine
    encoding of those numeric columns (see :class:`~spark_synth.schema.embedding.Embedding`); it
    must be public, e.g. post-processed from earlier DP releases. The sensitivity does not depend
    on the knots.
    """

    kind: ClassVar[str] = "moment"
    name: str
    directions: np.ndarray = field(repr=False)
    degree: int
    fraction_bits: int | None = None
    value_knots: dict | None = field(default=None, repr=False)
    max_rows: int = DEFAULT_MAX_ROWS
    #: The columns the embedding spans, in schema order (None: every column of the schema the
    #: query is answered over). A scoped oracle (a DGM partition's) sets it; public either way.
    columns: tuple[str, ...] | None = None

    #: Released sums must fit a signed 64-bit integer (OpenDP's exact discrete Gaussian input).
    MAX_ABS_SUM: ClassVar[int] = 2**62

    def __post_init__(self) -> None:
        bits = fraction_bits_for(self.max_rows) if self.fraction_bits is None else self.fraction_bits
        if isinstance(bits, bool) or not isinstance(bits, int) or not 1 <= bits <= MAX_FRACTION_BITS:
            raise ParameterError(f"fraction_bits of {self.name!r}", f"a whole number in [1, {MAX_FRACTION_BITS}], or None "
                                 "(derived from max_rows)", bits)
        object.__setattr__(self, "fraction_bits", bits)
        if self.columns is not None:
            if not isinstance(self.columns, tuple) or not self.columns or not all(isinstance(c, str) for c in self.columns):
                raise ParameterError(f"columns of {self.name!r}", "a non-empty tuple of column names, or None", self.columns)

    @property
    def n_directions(self) -> int:
        return int(self.directions.shape[0])

    def answer_shape(self, schema) -> tuple[int, ...]:
        return (self.n_directions, self.degree)

    @property
    def unit(self) -> float:
        return 2.0**self.fraction_bits

    def _per_entry_bound(self, j: int) -> float:
        return 1.0 / math.sqrt(j) + 0.5 * 2.0**-self.fraction_bits

    @property
    def l2_sensitivity(self) -> float:
        """ℓ2 change of the sum vector when one row is added or removed: ≈ √(L · H_k).

        Each entry |T_j(z)/√j| ≤ 1/√j because |z| ≤ 1, so the squared ℓ2 norm of one row's
        contribution is at most Σ_l Σ_j 1/j = L · H_k (H_k the k-th harmonic number ≤ 1 + ln k).
        Fixed-point rounding adds at most half a unit per entry; a relative margin of 1e-12 covers
        floating-point rounding of the bound itself.
        """
        per_direction = math.fsum(self._per_entry_bound(j) ** 2 for j in range(1, self.degree + 1))
        return math.sqrt(self.n_directions * per_direction) * (1.0 + 1e-12)

    @property
    def l1_sensitivity(self) -> float:
        """Σ_l Σ_j (1/√j + half a unit): the ℓ1 norm of one row's largest possible contribution."""
        per_direction = math.fsum(self._per_entry_bound(j) for j in range(1, self.degree + 1))
        return self.n_directions * per_direction * (1.0 + 1e-12)

    def describe(self) -> str:
        return f"sliced Chebyshev moment sums ({self.n_directions} directions x degrees 1..{self.degree}, fixed point)"
