"""The public encoding used by the distance, utility and privacy metrics (no Spark; pure numpy).

Every column maps to coordinates in [0, 1] using only the schema (never the data):

* categorical / ordinal: one-hot over the public categories plus the null code, scaled by 1/√2 so
  that two rows differing in one category are at Euclidean distance 1;
* integer / continuous: ``(clip(x) - min) / (max - min)``, nulls at 0, plus a 0/1 null indicator
  for nullable columns (a null vs a non-null value is at distance ≥ 1).

Out-of-domain values follow the ``clip`` policy (numbers to their bounds, unknown categories to null).
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..schema import Column, OutOfDomainPolicy, Schema
from ..schema.encoding import column_numbers, encode_column

_SQRT_HALF = float(np.sqrt(0.5))


class PublicEncoder:
    """Rows → points in ``[0, 1]^width`` from the public domain only (see module docstring)."""

    def __init__(self, schema: Schema, columns: list[str] | None = None):
        self.schema = schema
        self.columns = list(columns) if columns is not None else list(schema.names)
        self.slices: dict[str, slice] = {}
        start = 0
        for name in self.columns:
            width = self._width(schema[name])
            self.slices[name] = slice(start, start + width)
            start += width
        self.width = start

    @staticmethod
    def _width(column: Column) -> int:
        if column.type.is_discrete:
            return column.size
        return 2 if column.nullable else 1

    def transform(self, frame: pd.DataFrame) -> np.ndarray:
        out = np.zeros((len(frame), self.width), dtype=np.float64)
        for name in self.columns:
            column, where = self.schema[name], self.slices[name]
            block = out[:, where]
            if column.type.is_discrete:
                codes, _ = encode_column(frame[name], column, OutOfDomainPolicy.CLIP)
                block[np.arange(len(frame)), codes] = _SQRT_HALF
            else:
                x = column_numbers(frame[name], column) if column.type.is_temporal else \
                    pd.to_numeric(frame[name], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
                missing = np.isnan(x)
                scaled = (np.clip(np.nan_to_num(x, nan=column.min), column.min, column.max) - column.min) / (column.max - column.min)
                block[:, 0] = np.where(missing, 0.0, scaled)
                if column.nullable:
                    block[:, 1] = missing
            out[:, where] = block
        return out

    def bounds(self) -> tuple[np.ndarray, np.ndarray]:
        """Per-coordinate public range (all coordinates lie in [0, upper])."""
        upper = np.ones(self.width)
        for name in self.columns:
            if self.schema[name].type.is_discrete:
                upper[self.slices[name]] = _SQRT_HALF
        return np.zeros(self.width), upper
