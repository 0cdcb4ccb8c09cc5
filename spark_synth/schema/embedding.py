"""Public embedding of rows into vectors whose every column block has Euclidean norm ≤ 1.

* unordered categorical: one-hot over its codes (categories, plus null if nullable);
* ordinal: one grid coordinate over [-1, 1] (categories equally spaced, in order), plus a null
  indicator coordinate if nullable;
* integer / continuous: one coordinate, the value clipped to its public bounds and mapped
  affinely onto [-1, 1], plus a null indicator coordinate if nullable.

So ‖x‖₂ ≤ √(number of columns) for every row, and a direction w supported on the blocks of a
column set S satisfies |wᵀx| ≤ 1 when ‖w‖₂ ≤ 1/√|S| (Cauchy–Schwarz). Only public schema
information is used.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from .columns import Column, ColumnType, Schema
from .encoding import OutOfDomainPolicy, as_numbers, clipped_numbers, encode_frame


def _to_unit(values: np.ndarray, column: Column) -> np.ndarray:
    """The affine map of a numeric column's [min, max] onto [-1, 1]."""
    return 2.0 * (np.asarray(values, dtype=np.float64) - column.min) / (column.max - column.min) - 1.0


def _one_hot(column: Column) -> bool:
    return column.type is ColumnType.CATEGORICAL


def block_width(column: Column) -> int:
    if _one_hot(column):
        return column.size
    return 1 + (1 if column.nullable else 0)


class Embedding:
    """Offsets of each column's block, and the vector of every code of every column."""

    def __init__(self, schema: Schema):
        self.schema = schema
        widths = [block_width(c) for c in schema]
        self.offsets = np.concatenate([[0], np.cumsum(widths)]).astype(int)
        self.width = int(self.offsets[-1])

    def block(self, j: int) -> slice:
        return slice(int(self.offsets[j]), int(self.offsets[j + 1]))

    def code_vectors(self, j: int) -> np.ndarray:
        """(size, width_j) array: the embedded vector of each code of column j.

        Numeric bins are represented by their centre (clipped to the bounds).
        """
        column = self.schema.columns[j]
        vectors = np.zeros((column.size, block_width(column)))
        if _one_hot(column):
            return np.eye(column.size)
        vectors[: column.n_values, 0] = self._grid(column)
        if column.nullable:
            vectors[column.null_code, 1] = 1.0
        return vectors

    def value_edges(self, j: int) -> np.ndarray:
        """Public bin edges of numeric column j, mapped like its values onto the value coordinate."""
        column = self.schema.columns[j]
        return _to_unit(column.bin_edges, column)

    @staticmethod
    def _grid(column: Column) -> np.ndarray:
        if column.type.is_discrete:
            r = column.n_values
            return np.linspace(-1.0, 1.0, r) if r > 1 else np.zeros(1)
        edges = column.bin_edges
        return _to_unit(np.clip((edges[:-1] + edges[1:]) / 2, column.min, column.max), column)

    def embed(self, frame: pd.DataFrame, policy: OutOfDomainPolicy) -> tuple[np.ndarray, np.ndarray]:
        """(n, width) embedding of raw rows, and the per-column ``rejected`` flags of the encoder."""
        codes, rejected = encode_frame(frame, self.schema, policy)
        out = np.zeros((len(frame), self.width))
        for j, column in enumerate(self.schema):
            block = out[:, self.block(j)]
            if column.type.is_discrete:
                block[:] = self.code_vectors(j)[codes[:, j]]
                continue
            is_null = codes[:, j] == column.null_code if column.nullable else np.zeros(len(frame), bool)
            x = clipped_numbers(as_numbers(frame[column.name]), column)
            block[:, 0] = np.where(is_null, 0.0, _to_unit(x, column))
            if column.nullable:
                block[:, 1] = is_null.astype(np.float64)
        return out, rejected
