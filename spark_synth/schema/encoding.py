"""Raw values ⇄ integer codes over the public domain (pure pandas/numpy; no Spark).

Codes of a column run over ``0 .. column.size - 1``: category index or public bin index, and the
last code is "null" for nullable columns. The same functions encode rows on the executors (measure
layer) and decode generated codes back to typed values (sample layer).
"""

from __future__ import annotations

from enum import Enum

import numpy as np
import pandas as pd

from .columns import Column, ColumnType, Schema


class OutOfDomainPolicy(str, Enum):
    """What to do with values outside the declared public domain.

    ``clip`` (default): numbers are clipped to their bounds and unknown categories become null
    (a non-nullable column cannot absorb them, so that is still an error). ``error``: fail closed,
    naming the column only — how many rows were out of domain is itself private and is never
    reported.
    """

    CLIP = "clip"
    ERROR = "error"


def encode_frame(frame: pd.DataFrame, schema: Schema, policy: OutOfDomainPolicy) -> tuple[np.ndarray, np.ndarray]:
    """Encode ``frame`` (columns in schema order) to an ``(n, d)`` int64 code matrix.

    Returns ``(codes, rejected)`` where ``rejected[j]`` is True when column j held a value the
    policy cannot accept; callers must then fail without releasing anything.
    """
    codes = np.empty((len(frame), len(schema)), dtype=np.int64)
    rejected = np.zeros(len(schema), dtype=bool)
    for j, column in enumerate(schema):
        codes[:, j], rejected[j] = encode_column(frame[column.name], column, policy)
    return codes, rejected


def encode_column(values: pd.Series, column: Column, policy: OutOfDomainPolicy) -> tuple[np.ndarray, bool]:
    """Encode one column; returns ``(codes, rejected)`` (see :func:`encode_frame`)."""
    is_null = pd.isna(values).to_numpy()
    if column.type.is_discrete:
        codes = _category_index(values, column, is_null)
        unknown = (codes < 0) & ~is_null  # not one of the categories
        unusable = unknown  # under `clip`, these become null
    else:
        raw = as_numbers(values)
        unusable = ~is_null & np.isnan(raw)  # not a number at all: becomes null under `clip`
        unknown = unusable | (~is_null & ((raw < column.min) | (raw > column.max)))
        x = clipped_numbers(raw, column)  # `clip`: to the bounds
        codes = np.clip(np.searchsorted(column.bin_edges, x, side="right") - 1, 0, column.n_values - 1)
    rejected = policy is OutOfDomainPolicy.ERROR and bool(unknown.any())
    is_null = is_null | unusable
    if column.nullable:
        codes = np.where(is_null, column.null_code, codes)
    else:
        rejected = rejected or bool(is_null.any())
        codes = np.where(is_null, 0, codes)
    return codes.astype(np.int64), rejected


def as_numbers(values: pd.Series) -> np.ndarray:
    """Parse a column to float64; nulls and non-numbers become NaN."""
    return pd.to_numeric(values, errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)


def clipped_numbers(raw: np.ndarray, column: Column) -> np.ndarray:
    """Numbers clipped to the column's public bounds (NaN placed at ``min``; callers mask nulls)."""
    return np.clip(np.nan_to_num(raw, nan=column.min), column.min, column.max)


def _category_index(values: pd.Series, column: Column, is_null: np.ndarray) -> np.ndarray:
    categories = pd.Index(list(column.categories))
    if column.category_kind == "string":
        lookup = values.astype(object).where(~is_null, None)
        lookup = lookup.map(lambda v: v if v is None or isinstance(v, str) else str(v))
    else:
        numeric = as_numbers(values)
        if column.category_kind == "integer":
            whole = np.isfinite(numeric) & (numeric == np.round(numeric))
            # Non-integral numbers can never match an integer category: mark with an impossible key.
            sentinel = min(column.categories) - 1
            lookup = pd.Series(np.where(whole, numeric, sentinel).astype(np.int64))
        else:
            lookup = pd.Series(numeric)
    index = categories.get_indexer(lookup)
    return np.where(is_null, -1, index).astype(np.int64)


def decode_codes(codes: np.ndarray, schema: Schema, rng: np.random.Generator) -> pd.DataFrame:
    """Turn an ``(n, d)`` code matrix into typed values (categories, numbers, nulls).

    Numeric codes are decoded to a uniform draw inside their public bin (integers: a uniform
    integer of the bin), so decoding uses ``rng`` (modelling randomness, not privacy noise).
    """
    out = {}
    for j, column in enumerate(schema):
        out[column.name] = decode_column(codes[:, j], column, rng)
    return pd.DataFrame(out)


def decode_column(codes: np.ndarray, column: Column, rng: np.random.Generator) -> pd.Series:
    is_null = codes == column.null_code if column.nullable else np.zeros(len(codes), dtype=bool)
    safe = np.where(is_null, 0, codes)
    if column.type.is_discrete:
        values = np.asarray(column.categories, dtype=object)[safe]
        if column.category_kind == "integer":
            return pd.Series(pd.array(np.where(is_null, None, values), dtype="Int64"))
        if column.category_kind == "float":
            return pd.Series(np.where(is_null, np.nan, values).astype(np.float64))
        return pd.Series(np.where(is_null, None, values), dtype=object)
    edges = column.bin_edges
    lo, hi = edges[safe], edges[safe + 1]
    if column.type is ColumnType.INTEGER:
        first, last = np.ceil(lo), np.ceil(hi) - 1  # integers v with lo <= v < hi
        values = first + np.floor(rng.random(len(codes)) * (last - first + 1))
        values = np.clip(values, column.min, column.max)
        return pd.Series(pd.array(np.where(is_null, None, values.astype(np.int64)), dtype="Int64"))
    values = lo + rng.random(len(codes)) * (hi - lo)
    return pd.Series(np.where(is_null, np.nan, np.clip(values, column.min, column.max)))
