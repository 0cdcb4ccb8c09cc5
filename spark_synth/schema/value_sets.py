"""Sets of numbers a numeric column may take under a condition, and what they mean for its codes.

A :class:`NumberSet` is a union of disjoint intervals (ends open or closed, ±inf allowed). Against a
numeric column's public bins it gives each bin's *weight* — the share of the values decoding draws
in that bin (uniform on the bin; integer columns: uniform over its integers) that lie in the set —
and draws a bin's values inside the set (:func:`draw_within`), so a sample conditioned on the set is
exact for the model: P(code) · weight(code) is the probability of "code and value in the set".
Pure NumPy; used by the condition compiler and by decoding.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .columns import Column, ColumnType


@dataclass(frozen=True)
class Interval:
    """The numbers between ``low`` and ``high``; each end included when its flag is set."""

    low: float
    high: float
    low_closed: bool = True
    high_closed: bool = True

    @property
    def empty(self) -> bool:
        return self.low > self.high or (self.low == self.high and not (self.low_closed and self.high_closed))


class NumberSet:
    """A union of disjoint, sorted, non-empty :class:`Interval` s."""

    def __init__(self, intervals=()):
        self.intervals = tuple(sorted((i for i in intervals if not i.empty), key=lambda i: (i.low, not i.low_closed)))

    @classmethod
    def everything(cls) -> "NumberSet":
        return cls([Interval(-math.inf, math.inf, False, False)])

    @classmethod
    def point(cls, value: float) -> "NumberSet":
        return cls([Interval(value, value)])

    @classmethod
    def points(cls, values) -> "NumberSet":
        return cls.union_of([cls.point(v) for v in values])

    @classmethod
    def union_of(cls, sets) -> "NumberSet":
        """The union of several sets (merged into disjoint intervals)."""
        pieces = sorted((i for s in sets for i in s.intervals), key=lambda i: (i.low, not i.low_closed))
        merged: list[Interval] = []
        for piece in pieces:
            last = merged[-1] if merged else None
            if last is not None and (piece.low < last.high or (piece.low == last.high and (piece.low_closed or last.high_closed))):
                if (piece.high, piece.high_closed) > (last.high, last.high_closed):
                    merged[-1] = Interval(last.low, piece.high, last.low_closed, piece.high_closed)
            else:
                merged.append(piece)
        return cls(merged)

    def intersect(self, other: "NumberSet") -> "NumberSet":
        out = []
        for a in self.intervals:
            for b in other.intervals:
                low, low_closed = max((a.low, not a.low_closed), (b.low, not b.low_closed))
                high, high_open = min((a.high, not a.high_closed), (b.high, not b.high_closed))
                out.append(Interval(low, high, not low_closed, not high_open))
        return NumberSet(out)

    def complement(self) -> "NumberSet":
        out, low, low_closed = [], -math.inf, False
        for i in self.intervals:
            out.append(Interval(low, i.low, low_closed, not i.low_closed))
            low, low_closed = i.high, not i.high_closed
        out.append(Interval(low, math.inf, low_closed, False))
        return NumberSet(out)

    def contains(self, values: np.ndarray) -> np.ndarray:
        values = np.asarray(values, dtype=np.float64)
        inside = np.zeros(values.shape, dtype=bool)
        for i in self.intervals:
            above = values >= i.low if i.low_closed else values > i.low
            below = values <= i.high if i.high_closed else values < i.high
            inside |= above & below
        return inside

    def __repr__(self) -> str:
        return " ∪ ".join(f"{'[' if i.low_closed else '('}{i.low}, {i.high}{']' if i.high_closed else ')'}"
                          for i in self.intervals) or "∅"


def bin_weights(column: Column, allowed: NumberSet) -> np.ndarray:
    """Per non-null code of a numeric ``column``: the share of the bin's decoded values in ``allowed``."""
    return np.array([sum(length for length in _pieces(column, code, allowed)[1]) / _bin_size(column, code)
                     for code in range(column.n_values)], dtype=np.float64)


def draw_within(codes: np.ndarray, column: Column, allowed: NumberSet, rng: np.random.Generator) -> np.ndarray:
    """Float values for non-null ``codes`` of a numeric column, each drawn like decoding draws in its bin
    (uniform; integer columns: a uniform integer) but restricted to ``allowed`` (codes of weight 0 get
    their bin's lower end: callers never sample them)."""
    values = np.empty(len(codes), dtype=np.float64)
    uniforms = rng.random(len(codes))
    integer = column.type.model_type is ColumnType.INTEGER
    for code in np.unique(codes):
        rows = np.flatnonzero(codes == code)
        starts, lengths = _pieces(column, int(code), allowed)
        if not lengths:
            values[rows] = column.bin_edges[code]
            continue
        cumulative = np.cumsum(lengths)
        position = uniforms[rows] * cumulative[-1]
        piece = np.minimum(np.searchsorted(cumulative, position, side="right"), len(lengths) - 1)
        offset = position - (cumulative[piece] - np.asarray(lengths)[piece])
        values[rows] = np.asarray(starts)[piece] + (np.floor(offset) if integer else offset)
    if integer:
        return values
    return np.clip(values, column.min, column.max)


def _bin_size(column: Column, code: int) -> float:
    low, high = column.bin_edges[code], column.bin_edges[code + 1]
    if column.type.model_type is ColumnType.INTEGER:
        return float(math.ceil(high) - math.ceil(low))
    return float(high - low)


def _pieces(column: Column, code: int, allowed: NumberSet) -> tuple[list[float], list[float]]:
    """The parts of bin ``code`` inside ``allowed``: start and length of each (integer columns: the
    first integer and how many integers)."""
    low, high = float(column.bin_edges[code]), float(column.bin_edges[code + 1])
    starts, lengths = [], []
    if column.type.model_type is ColumnType.INTEGER:
        first, last = math.ceil(low), math.ceil(high) - 1  # the integers decoding draws in this bin
        for i in allowed.intervals:
            a = max(first, _smallest_integer(i))
            b = min(last, _largest_integer(i))
            if a <= b:
                starts.append(float(a))
                lengths.append(float(b - a + 1))
        return starts, lengths
    for i in allowed.intervals:
        a, b = max(low, i.low), min(high, i.high)
        if b > a:
            starts.append(a)
            lengths.append(b - a)
    return starts, lengths


def _smallest_integer(interval: Interval) -> float:
    if math.isinf(interval.low):
        return -math.inf
    value = math.ceil(interval.low)
    return value + 1 if (value == interval.low and not interval.low_closed) else value


def _largest_integer(interval: Interval) -> float:
    if math.isinf(interval.high):
        return math.inf
    value = math.floor(interval.high)
    return value - 1 if (value == interval.high and not interval.high_closed) else value
