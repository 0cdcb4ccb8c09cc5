"""Exact per-column statistics for the DP schema pre-pass (:mod:`spark_synth.prepass`), in ONE pass.

For each requested column, over its non-null values:
* ``classes``: how many parse as whole numbers, as other finite numbers, or as neither
  (``as_numbers``, the encoder's own parse) — each value counts in exactly one;
* ``grid``: how many numbers fall in each cell of a public candidate grid (cell ``b`` holds
  ``grid[b-1] < x <= grid[b]``; the last cell everything above the grid) — one cell per value
  (the call's grid, or the request's own);
* ``ties``: how many numbers equal each grid point — at most one point per value;
* ``categories`` (text columns only): how many times each distinct value (as text) occurs;
* ``kinds`` (``kinds=True``, a CSV's text columns): how many values are 0 or 1, other whole
  numbers, other numbers, ISO dates (``YYYY-MM-DD``), ``true``/``false`` (any case), or anything
  else (:data:`KINDS`) — each value counts in exactly one; with ``date_grid``, the ISO dates (as
  days since 1970-01-01) are also counted on that grid (``date_cells``, ``date_ties``).

Date and timestamp columns (``temporal``) are counted as numbers: days since 1970-01-01, seconds
since 1970-01-01 UTC (timestamp) or on the wall clock (timestamp_ntz), whatever the session time
zone (:func:`~spark_synth.schema.spark_types.epoch_number`).

So one row changes each column's vectors by one in one entry: the ℓ2 sensitivity per vector is 1.
Partitions emit their partial counts, Spark sums them (a distributed aggregation), and only the
aggregated counts reach the driver — never a row. They are exact: only the pre-pass's mechanisms
may see them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Sequence

import numpy as np
import pandas as pd

from ..schema.columns import ColumnType
from ..schema.encoding import as_numbers, temporal_numbers
from ..schema.text_casts import iso_days  # the ISO dates Spark's cast reads; also imported from here

#: Value classes, in the order of ``ColumnProfile.classes``.
WHOLE, FRACTIONAL, OTHER = 0, 1, 2
#: Kinds of a text value, in the order of ``ColumnProfile.kinds`` (one per value).
ZERO_ONE, OTHER_WHOLE, OTHER_NUMBER, ISO_DATE, TRUE_FALSE, TEXT = range(6)
KINDS = ("0 or 1", "other whole number", "other number", "ISO date", "true/false", "other text")
_OUT_SCHEMA = "col int, part int, cell long, key string, total long"
_CLASSES, _GRID, _CATEGORIES, _TIES, _KINDS, _DATE_CELLS, _DATE_TIES = range(7)
#: The profile's count array each part's cells are summed into (categories: a dict by value instead).
_ARRAYS = {_CLASSES: "classes", _GRID: "grid", _TIES: "ties", _KINDS: "kinds", _DATE_CELLS: "date_cells",
           _DATE_TIES: "date_ties"}


@dataclass(frozen=True)
class ProfileRequest:
    """What to count for one column: numbers (classes and grid cells), and/or text categories;
    ``temporal`` reads a date / timestamp / timestamp_ntz column as numbers (days / seconds), and
    ``grid`` is the column's own public candidate grid (None: the one the profile call is given);
    ``kinds`` counts the kinds of a text column's values, ``date_grid`` its ISO dates on that grid."""

    name: str
    numbers: bool
    categories: bool
    temporal: ColumnType | None = None
    grid: np.ndarray | None = field(default=None, compare=False, repr=False)
    kinds: bool = False
    date_grid: np.ndarray | None = field(default=None, compare=False, repr=False)


@dataclass
class ColumnProfile:
    """Exact counts of one column (see the module docstring)."""

    classes: np.ndarray
    grid: np.ndarray
    ties: np.ndarray
    categories: dict[str, int] = field(default_factory=dict)
    kinds: np.ndarray = field(default_factory=lambda: np.zeros(len(KINDS), dtype=np.int64))
    date_cells: np.ndarray | None = None  # on the request's date_grid, like grid / ties
    date_ties: np.ndarray | None = None


def value_kinds(values: pd.Series, x: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Each non-null value's kind (:data:`KINDS`) and its ISO-date days (NaN if not a date)."""
    x = as_numbers(values) if x is None else x
    finite = np.isfinite(x)
    safe = np.where(finite, x, 0.0)
    days, flags = np.full(len(values), np.nan), np.zeros(len(values), dtype=bool)
    rest = np.flatnonzero(~finite)  # only the values that are not numbers are parsed again
    if rest.size:
        others = values.iloc[rest]
        days[rest] = iso_days(others)
        flags[rest] = others.map(lambda v: isinstance(v, str) and v.strip().lower() in ("true", "false")).to_numpy(dtype=bool)
    kinds = np.select([finite & ((safe == 0) | (safe == 1)), finite & (np.floor(safe) == safe), finite,
                       ~np.isnan(days), flags & ~finite], [ZERO_ONE, OTHER_WHOLE, OTHER_NUMBER, ISO_DATE, TRUE_FALSE],
                      TEXT)
    return kinds.astype(np.int64), days


def partition_profile(requests: Sequence[ProfileRequest], grid: np.ndarray):
    """The per-partition function: partial counts of every requested column (public closure)."""
    grids = [np.asarray(grid if r.grid is None else r.grid, dtype=np.float64) for r in requests]
    date_grids = [None if r.date_grid is None else np.asarray(r.date_grid, dtype=np.float64) for r in requests]

    def scan(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        classes = np.zeros((len(requests), 3), dtype=np.int64)
        kinds = np.zeros((len(requests), len(KINDS)), dtype=np.int64)
        cells = [np.zeros(g.size + 1, dtype=np.int64) for g in grids]
        ties = [np.zeros(g.size, dtype=np.int64) for g in grids]
        date_cells = [np.zeros(0 if g is None else g.size + 1, dtype=np.int64) for g in date_grids]
        date_ties = [np.zeros(0 if g is None else g.size, dtype=np.int64) for g in date_grids]
        categories: list[dict[str, int]] = [{} for _ in requests]
        for frame in batches:
            for j, request in enumerate(requests):
                values = frame.iloc[:, j]
                present = values[~pd.isna(values).to_numpy(dtype=bool)]
                x = None
                if request.numbers:
                    x = as_numbers(present) if request.temporal is None else temporal_numbers(present, request.temporal)
                    finite = np.isfinite(x)
                    whole = finite & (np.floor(np.where(finite, x, 0.0)) == np.where(finite, x, 0.0))
                    classes[j] += [int(whole.sum()), int((finite & ~whole).sum()), int((~finite).sum())]
                    numbers = x[~np.isnan(x)]  # ±inf sit in the first / last cell
                    column_grid = grids[j]
                    index = np.searchsorted(column_grid, numbers, side="left")
                    _add_counts(cells[j], index)
                    on_point = index < column_grid.size
                    on_point[on_point] = column_grid[index[on_point]] == numbers[on_point]
                    _add_counts(ties[j], index[on_point])
                if request.kinds:
                    kind, days = value_kinds(present, x if request.temporal is None else None)
                    _add_counts(kinds[j], kind)
                    if date_grids[j] is not None:
                        _count_on(date_grids[j], days[~np.isnan(days)], date_cells[j], date_ties[j])
                if request.categories:
                    for key, count in present.map(_text).value_counts().items():
                        categories[j][key] = categories[j].get(key, 0) + int(count)
        frames = []
        for j in range(len(requests)):
            for part, vector in ((_CLASSES, classes[j]), (_GRID, cells[j]), (_TIES, ties[j]), (_KINDS, kinds[j]),
                                 (_DATE_CELLS, date_cells[j]), (_DATE_TIES, date_ties[j])):
                nonzero = np.flatnonzero(vector)
                frames.append(pd.DataFrame({"col": j, "part": part, "cell": nonzero, "key": "", "total": vector[nonzero]}))
            if categories[j]:
                frames.append(pd.DataFrame({"col": j, "part": _CATEGORIES, "cell": 0, "key": list(categories[j]),
                                            "total": list(categories[j].values())}))
        out = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame(columns=["col", "part", "cell", "key", "total"])
        yield out.astype({"col": "int32", "part": "int32", "cell": "int64", "key": object, "total": "int64"})

    return scan


def _count_on(grid: np.ndarray, numbers: np.ndarray, cells: np.ndarray, ties: np.ndarray) -> None:
    """Add ``numbers`` to their grid cells and to the grid points they equal."""
    index = np.searchsorted(grid, numbers, side="left")
    _add_counts(cells, index)
    on_point = index < grid.size
    on_point[on_point] = grid[index[on_point]] == numbers[on_point]
    _add_counts(ties, index[on_point])


def _add_counts(totals: np.ndarray, index: np.ndarray) -> None:
    """``totals[i] += #{index == i}``, in time of the batch, not of the grid (a timestamp grid is long)."""
    cells, counts = np.unique(index, return_counts=True)
    totals[cells] += counts


def _text(value) -> str:
    """A category as the encoder matches it (strings as they are, anything else as ``str``)."""
    return value if isinstance(value, str) else str(value)


def profile_columns(df, requests: Sequence[ProfileRequest], grid: np.ndarray) -> list[ColumnProfile]:
    """Exact profiles of ``requests`` over Spark DataFrame ``df``, in one distributed pass."""
    from pyspark.sql import functions as F

    from ..schema.spark_types import epoch_number
    from .answers import _quoted

    types = {f.name: f.dataType for f in df.schema.fields}
    read = [F.col(_quoted(r.name)) for r in requests]
    read = [c if r.temporal is None else epoch_number(r.temporal, types.get(r.name), c) for r, c in zip(requests, read)]
    rows = (df.select(*[column.alias(f"_c{j}") for j, column in enumerate(read)])
            .mapInPandas(partition_profile(list(requests), np.asarray(grid, dtype=np.float64)), _OUT_SCHEMA)
            .groupBy("col", "part", "cell", "key").agg(F.sum("total").alias("total"))
            .collect())
    return _assemble(requests, grid, ((r["col"], r["part"], r["cell"], r["key"], r["total"]) for r in rows))


def profile_frame(frame: pd.DataFrame, requests: Sequence[ProfileRequest], grid: np.ndarray) -> list[ColumnProfile]:
    """The same profiles computed in-process on a pandas frame (tests)."""
    scan = partition_profile(list(requests), np.asarray(grid, dtype=np.float64))
    (partial,) = list(scan(iter([frame[[r.name for r in requests]]])))
    return _assemble(requests, grid, partial.itertuples(index=False, name=None))


def _assemble(requests: Sequence[ProfileRequest], grid: np.ndarray, entries) -> list[ColumnProfile]:
    sizes = [len(grid if r.grid is None else r.grid) for r in requests]
    out = [ColumnProfile(np.zeros(3, dtype=np.int64), np.zeros(size + 1, dtype=np.int64),
                         np.zeros(size, dtype=np.int64)) for size in sizes]
    for profile, request in zip(out, requests):
        if request.date_grid is not None:
            profile.date_cells = np.zeros(len(request.date_grid) + 1, dtype=np.int64)
            profile.date_ties = np.zeros(len(request.date_grid), dtype=np.int64)
    for col, part, cell, key, total in entries:
        profile = out[int(col)]
        if int(part) in _ARRAYS:
            getattr(profile, _ARRAYS[int(part)])[int(cell)] += int(total)
        else:
            profile.categories[str(key)] = profile.categories.get(str(key), 0) + int(total)
    return out
