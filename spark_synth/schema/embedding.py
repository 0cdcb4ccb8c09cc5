"""Public embedding of rows into vectors whose every column block has Euclidean norm ≤ 1.

* unordered categorical: one-hot over its codes (categories, plus null if nullable);
* ordinal: one grid coordinate over [-1, 1] (categories equally spaced, in order), plus a null
  indicator coordinate if nullable;
* integer / continuous: one coordinate, the value clipped to its public bounds and mapped onto
  [-1, 1] — affinely, or, when ``value_knots`` gives a column the images of its public bin edges
  (non-decreasing from -1 to 1, e.g. from a DP histogram), piecewise linearly through them — plus
  a null indicator coordinate if nullable.

Rows are encoded first (:func:`~spark_synth.schema.encoding.encode_frame`), so a non-nullable
column's null, unknown category or non-number is embedded as its public substitute (its first
category; its lower bound), exactly the code the marginal counts see. Every coordinate is finite.

So ‖x‖₂ ≤ √(number of columns) for every row, and a direction w supported on the blocks of a
column set S satisfies |wᵀx| ≤ 1 when ‖w‖₂ ≤ 1/√|S| (Cauchy–Schwarz). Only public schema
information is used.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from typing import Mapping

from ..errors import InternalError, ParameterError
from .columns import Column, ColumnType, Schema
from .encoding import OutOfDomainPolicy, clipped_numbers, column_numbers, encode_frame


def _to_unit(values: np.ndarray, column: Column) -> np.ndarray:
    """The affine map of a numeric column's [min, max] onto [-1, 1] (finite for any finite
    bounds the schema accepts: the ratio is taken before doubling)."""
    low, span = float(column.min), float(column.max) - float(column.min)
    return 2.0 * ((np.asarray(values, dtype=np.float64) - low) / span) - 1.0


def one_hot(column: Column) -> bool:
    """Whether the column is embedded as a one-hot block (unordered: categorical or boolean)."""
    return column.type.model_type is ColumnType.CATEGORICAL


def block_width(column: Column) -> int:
    if one_hot(column):
        return column.size
    return 1 + (1 if column.nullable else 0)


def check_value_knots(schema: Schema, value_knots: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Validated copies of per-column knots: numeric columns only, one knot per public bin edge,
    non-decreasing from exactly -1 to exactly 1 (so every value still maps into [-1, 1])."""
    out = {}
    for name, knots in value_knots.items():
        column = schema[name]
        knots = np.asarray(knots, dtype=np.float64)
        if column.type.is_discrete:
            raise ParameterError(f"value_knots[{name}]", "knots only for integer/continuous columns", column.type.value)
        if knots.shape != (column.n_values + 1,):
            raise ParameterError(f"value_knots[{name}]", f"{column.n_values + 1} knots (one per public bin edge)", knots.shape)
        if knots[0] != -1.0 or knots[-1] != 1.0 or np.any(np.diff(knots) < 0) or not np.all(np.isfinite(knots)):
            raise ParameterError(f"value_knots[{name}]", "finite, non-decreasing, from -1 to 1", knots)
        out[name] = knots
    return out


class Embedding:
    """Offsets of each column's block, and the vector of every code of every column."""

    def __init__(self, schema: Schema, value_knots: Mapping[str, np.ndarray] | None = None):
        self.schema = schema
        self.value_knots = check_value_knots(schema, value_knots or {})
        widths = [block_width(c) for c in schema]
        self.offsets = np.concatenate([[0], np.cumsum(widths)]).astype(int)
        self.width = int(self.offsets[-1])

    def to_unit(self, values: np.ndarray, column: Column) -> np.ndarray:
        """A numeric column's values (within its bounds) on its value coordinate in [-1, 1]."""
        knots = self.value_knots.get(column.name)
        if knots is None:
            return _to_unit(values, column)
        return np.interp(np.asarray(values, dtype=np.float64), column.bin_edges, knots)

    def block(self, j: int) -> slice:
        return slice(int(self.offsets[j]), int(self.offsets[j + 1]))

    def code_vectors(self, j: int) -> np.ndarray:
        """(size, width_j) array: the embedded vector of each code of column j.

        Numeric bins are represented by their centre (clipped to the bounds).
        """
        column = self.schema.columns[j]
        vectors = np.zeros((column.size, block_width(column)))
        if one_hot(column):
            return np.eye(column.size)
        vectors[: column.n_values, 0] = self._grid(column)
        if column.nullable:
            vectors[column.null_code, 1] = 1.0
        return vectors

    def value_edges(self, j: int) -> np.ndarray:
        """Public bin edges of numeric column j, mapped like its values onto the value coordinate."""
        column = self.schema.columns[j]
        return self.to_unit(column.bin_edges, column)

    def _grid(self, column: Column) -> np.ndarray:
        if column.type.is_discrete:
            r = column.n_values
            return np.linspace(-1.0, 1.0, r) if r > 1 else np.zeros(1)
        edges = column.bin_edges
        centres = edges[:-1] + np.diff(edges) / 2  # not (a + b) / 2, which overflows near ±1.8e308
        return self.to_unit(np.clip(centres, column.min, column.max), column)

    def embed(self, frame: pd.DataFrame, policy: OutOfDomainPolicy, codes: np.ndarray | None = None,
              numbers: Mapping[int, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(n, width) embedding of raw rows, and the per-column ``rejected`` flags of the encoder
        (none when the caller passes the frame's ``codes`` — and optionally its parsed ``numbers`` —
        having collected them already)."""
        if codes is None:
            numbers = {}
            codes, rejected = encode_frame(frame, self.schema, policy, numbers)
        else:
            rejected = np.zeros(len(self.schema), dtype=bool)
        out = np.zeros((len(frame), self.width))
        values = self.value_coordinates(frame, codes, numbers)
        for j, column in enumerate(self.schema):
            block = out[:, self.block(j)]
            if column.type.is_discrete:
                block[:] = self.code_vectors(j)[codes[:, j]]
                continue
            block[:, 0] = values[j]
            if column.nullable:
                block[:, 1] = (codes[:, j] == column.null_code).astype(np.float64)
        if not np.isfinite(out).all():
            raise InternalError("the public embedding produced a non-finite coordinate")
        return out, rejected

    def value_coordinates(self, frame: pd.DataFrame, codes: np.ndarray,
                          numbers: Mapping[int, np.ndarray] | None = None) -> dict[int, np.ndarray]:
        """Each numeric column's value coordinate (0 for a null; see the module docstring), by
        column position; the rest of every block is a function of the row's code. ``numbers``:
        the columns' parsed values from :func:`encode_frame`, if the caller has them."""
        values = {}
        for j, column in enumerate(self.schema):
            if column.type.is_discrete:
                continue
            is_null = codes[:, j] == column.null_code if column.nullable else np.zeros(len(frame), bool)
            raw = numbers[j] if numbers is not None and j in numbers else column_numbers(frame[column.name], column)
            x = clipped_numbers(raw, column)  # a non-nullable column's substitute: min
            values[j] = np.where(is_null, 0.0, self.to_unit(x, column))
        return values
