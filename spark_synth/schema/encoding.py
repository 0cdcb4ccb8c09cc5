"""Raw values ⇄ integer codes over the public domain (pure pandas/numpy; no Spark).

Codes of a column run over ``0 .. column.size - 1``: category index or public bin index, and the
last code is "null" for nullable columns. The same functions encode rows on the executors (measure
layer) and decode generated codes back to typed values (sample layer).
"""

from __future__ import annotations

import datetime as dt
from enum import Enum

import numpy as np
import pandas as pd

from .columns import EPOCH, Column, ColumnType, Schema
from .value_sets import NumberSet, draw_within
from .text_casts import spark_boolean, text_epoch_seconds, texts_epoch_seconds


class OutOfDomainPolicy(str, Enum):
    """What to do with values outside the declared public domain.

    ``clip`` (default) never refuses: numbers (±inf included) are clipped to their bounds; nulls,
    NaN, unknown categories and non-numbers become null, or — in a non-nullable column — the
    column's public substitute (:func:`substitute_code`: its first category, or its lower bound
    and so its first bin). ``error``: fail closed, naming the column only — how many rows were out
    of domain is itself private and is never reported.
    """

    CLIP = "clip"
    ERROR = "error"


def encode_frame(frame: pd.DataFrame, schema: Schema, policy: OutOfDomainPolicy,
                 numbers: dict[int, np.ndarray] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Encode ``frame`` (columns in schema order) to an ``(n, d)`` int64 code matrix.

    Returns ``(codes, rejected)`` where ``rejected[j]`` is True when column j held a value the
    policy cannot accept; callers must then fail without releasing anything. ``numbers`` (optional)
    receives each numeric column's parsed values (:func:`column_numbers`), by position, so callers
    that need them again do not parse twice.
    """
    codes = np.empty((len(frame), len(schema)), dtype=np.int64)
    rejected = np.zeros(len(schema), dtype=bool)
    for j, column in enumerate(schema):
        raw = None if column.type.is_discrete else column_numbers(frame[column.name], column)
        if numbers is not None and raw is not None:
            numbers[j] = raw
        codes[:, j], rejected[j] = encode_column(frame[column.name], column, policy, raw)
    return codes, rejected


def encode_column(values: pd.Series, column: Column, policy: OutOfDomainPolicy,
                  raw: np.ndarray | None = None) -> tuple[np.ndarray, bool]:
    """Encode one column; returns ``(codes, rejected)`` (see :func:`encode_frame`). ``raw``: a
    numeric column's values already parsed by :func:`column_numbers`, if the caller has them.

    Each row's code depends on that row's value only; ``rejected`` is only ever True under
    ``error`` (a value outside the domain, or a null in a non-nullable column)."""
    is_null = pd.isna(values).to_numpy(dtype=bool)
    if column.type.is_discrete:
        codes = _category_index(values, column, is_null)
        unusable = (codes < 0) & ~is_null  # not one of the categories
        unknown = unusable
    else:
        raw = column_numbers(values, column) if raw is None else raw
        unusable = ~is_null & np.isnan(raw)  # not a number at all
        unknown = unusable | (~is_null & ((raw < column.min) | (raw > column.max)))
        codes = bin_codes(clipped_numbers(raw, column), column)  # `clip`: to the bounds
    is_null = is_null | unusable
    if not column.nullable:
        unknown = unknown | is_null
    rejected = policy is OutOfDomainPolicy.ERROR and bool(unknown.any())
    codes = np.where(is_null, column.null_code if column.nullable else substitute_code(column), codes)
    return codes.astype(np.int64), rejected


def substitute_code(column: Column) -> int:
    """The public code that, under ``clip``, stands in a non-nullable column for a null, NaN,
    unknown category or non-number: 0 — the first category, or the first bin (numeric columns
    embed it as their lower bound ``min``, see :func:`clipped_numbers`). Fixed by the schema, so
    such a row counts like any other and nothing is refused."""
    return 0


def bin_codes(x: np.ndarray, column: Column) -> np.ndarray:
    """Public bin index of numbers already within the column's bounds."""
    return np.clip(np.searchsorted(column.bin_edges, x, side="right") - 1, 0, column.n_values - 1)


def as_numbers(values: pd.Series) -> np.ndarray:
    """Parse a column to float64, value by value: nulls and non-numbers become NaN; numbers beyond
    float64 become ±inf (then clipped like any number)."""
    try:
        parsed = pd.to_numeric(values, errors="coerce")
    except OverflowError:  # a Python int beyond float64: the same parse with it as ±inf
        parsed = pd.to_numeric(values.map(_tame_int), errors="coerce")
    return np.asarray(parsed.to_numpy(dtype=np.float64, na_value=np.nan), dtype=np.float64)


def column_numbers(values: pd.Series, column: Column) -> np.ndarray:
    """A numeric column's values as float64 (NaN: null or not a value of its kind); date and
    timestamp columns through :func:`temporal_numbers`."""
    if not column.type.is_temporal:
        return as_numbers(values)
    return temporal_numbers(values, column.type)


def temporal_numbers(values: pd.Series, kind: ColumnType) -> np.ndarray:
    """Date / timestamp values (``date``/``datetime``/``datetime64``) as days since 1970-01-01 (date),
    seconds since 1970-01-01 UTC (timestamp: naive values are UTC) or seconds since 1970-01-01 00:00
    on the wall clock (timestamp_ntz: an aware value counts by its own wall clock, its zone dropped);
    text (a CSV's) as Spark's cast reads it (:mod:`~spark_synth.schema.text_casts`: null where the fit's
    ``try_cast`` gives null); NaN for anything else. Numbers are taken as already converted (the
    measure layer converts them in Spark, see :func:`~spark_synth.schema.spark_types.epoch_number`)."""
    if pd.api.types.is_numeric_dtype(values.dtype) and values.dtype != bool:
        return as_numbers(values)
    if pd.api.types.infer_dtype(values, skipna=True) == "string":  # a CSV's text: all at once
        seconds = texts_epoch_seconds(values, kind)
    else:
        seconds = np.fromiter((_epoch_seconds(v, kind) for v in values), dtype=np.float64, count=len(values))
    return np.floor(seconds / 86400.0) if kind is ColumnType.DATE else seconds


def _epoch_seconds(value, kind: ColumnType) -> float:
    """Seconds since the epoch of one date/datetime value; NaN for anything else (a date column
    takes dates only; a timestamp column dates too, as midnight UTC — a timestamp_ntz column as
    midnight on the wall clock). Text is read as Spark casts it to the column's type, as the fit
    reads it (:func:`~spark_synth.schema.text_casts.text_epoch_seconds`; zone-less timestamps in UTC,
    the packaged profiles' session time zone)."""
    if isinstance(value, str):
        return text_epoch_seconds(value, kind)
    if isinstance(value, np.datetime64):
        value = pd.Timestamp(value)
    if value is pd.NaT or not isinstance(value, dt.date):
        return np.nan
    if isinstance(value, dt.datetime):
        if kind is ColumnType.DATE:
            return np.nan
        if kind is ColumnType.TIMESTAMP_NTZ or value.tzinfo is None:  # the wall clock, read as if it were UTC
            value = value.replace(tzinfo=dt.timezone.utc)
        return (value - EPOCH).total_seconds()
    return float((value - EPOCH.date()).days) * 86400.0


def _tame_int(value):
    if isinstance(value, int) and not isinstance(value, bool):
        try:
            float(value)
        except OverflowError:
            return np.inf if value > 0 else -np.inf
    return value


def clipped_numbers(raw: np.ndarray, column: Column) -> np.ndarray:
    """Numbers clipped to the column's public bounds; NaN (nulls, non-numbers) placed at ``min`` —
    the public substitute of a non-nullable column (nullable columns mask them as null)."""
    return np.clip(np.nan_to_num(raw, nan=column.min, posinf=column.max, neginf=column.min), column.min, column.max)


def _category_index(values: pd.Series, column: Column, is_null: np.ndarray) -> np.ndarray:
    """Index of each value among the categories; -1 for nulls and anything else."""
    categories = pd.Index(list(column.categories))
    if column.category_kind == "boolean":
        index = np.fromiter((_boolean_index(v) for v in values), np.int64, len(values))
    elif column.category_kind == "string":
        lookup = values
        if pd.api.types.infer_dtype(values, skipna=True) not in ("string", "empty"):  # not all strings: as text
            lookup = values.astype(object).where(~is_null, None)
            lookup = lookup.map(lambda v: v if v is None or isinstance(v, str) else str(v))
        index = categories.get_indexer(lookup)
    elif column.category_kind == "integer":
        numeric = as_numbers(values)
        # Only whole numbers inside int64 can match an integer category.
        whole = np.isfinite(numeric) & (numeric == np.round(numeric)) & (np.abs(numeric) < 2.0**63)
        index = np.full(len(numeric), -1, dtype=np.int64)
        index[whole] = categories.get_indexer(numeric[whole].astype(np.int64))
    else:
        index = categories.get_indexer(pd.Series(as_numbers(values)))
    return np.where(is_null, -1, index).astype(np.int64)


def _boolean_index(value) -> int:
    """A boolean's category index (False 0, True 1); text as Spark's cast to boolean reads it — the fit
    reads a CSV's text so (``true``/``t``/``yes``/``y``/``1``, ``false``/``f``/``no``/``n``/``0``, any
    case, :func:`~spark_synth.schema.text_casts.spark_boolean`); -1 for anything else."""
    if isinstance(value, (bool, np.bool_)):
        return int(value)
    if isinstance(value, str):
        parsed = spark_boolean(value)
        return -1 if parsed is None else int(parsed)
    return -1


def decode_codes(codes: np.ndarray, schema: Schema, rng: np.random.Generator,
                 within: dict[int, NumberSet] | None = None) -> pd.DataFrame:
    """Turn an ``(n, d)`` code matrix into typed values (categories, numbers, nulls).

    Numeric codes are decoded to a uniform draw inside their public bin (integers: a uniform
    integer of the bin), so decoding uses ``rng`` (modelling randomness, not privacy noise).
    ``within`` (numeric column position → :class:`~.value_sets.NumberSet`): those columns' draws
    stay inside the set (a conditioned sample, :func:`~.value_sets.draw_within`).
    """
    out = {}
    for j, column in enumerate(schema):
        out[column.name] = decode_column(codes[:, j], column, rng, (within or {}).get(j))
    return pd.DataFrame(out)


def rounded_within(values: np.ndarray, column: Column) -> np.ndarray:
    """``values`` rounded to the column's ``decimals``, kept within its bounds: to the roundest values
    inside [min, max] when those exist (a bound that is not round is not written), else the bounds."""
    scale = 10.0**column.decimals
    low, high = np.ceil(column.min * scale) / scale, np.floor(column.max * scale) / scale
    if low > high:  # no value with that many decimals lies within the bounds
        return values
    return np.clip(np.round(values, column.decimals), low, high)


def decode_column(codes: np.ndarray, column: Column, rng: np.random.Generator,
                  allowed: NumberSet | None = None) -> pd.Series:
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
    if column.type.model_type is ColumnType.INTEGER:
        if allowed is not None:
            values = draw_within(safe, column, allowed, rng)
        else:
            first, last = np.ceil(lo), np.ceil(hi) - 1  # integers v with lo <= v < hi
            values = first + np.floor(rng.random(len(codes)) * (last - first + 1))
        values = np.clip(values, column.min, column.max)
        if column.type is ColumnType.DATE:  # whole days since 1970-01-01
            days = values.astype(np.int64).astype("datetime64[D]").astype(object)
            return pd.Series(np.where(is_null, None, days), dtype=object)
        return pd.Series(pd.array(np.where(is_null, None, values.astype(np.int64)), dtype="Int64"))
    values = np.clip(lo + rng.random(len(codes)) * (hi - lo), column.min, column.max) if allowed is None \
        else draw_within(safe, column, allowed, rng)
    if column.decimals is not None:
        rounded = rounded_within(values, column)
        values = rounded if allowed is None else np.where(allowed.contains(rounded), rounded, values)
    if column.type in (ColumnType.TIMESTAMP, ColumnType.TIMESTAMP_NTZ):
        # seconds since the epoch, to whole microseconds within the bounds: an instant in UTC, or a
        # naive wall-clock time (timestamp_ntz; Spark writes it as it is, whatever the session zone)
        micros = np.clip(np.round(values * 1e6), np.ceil(column.min * 1e6), np.floor(column.max * 1e6))
        stamps = pd.Series(micros.astype(np.int64).astype("datetime64[us]"))
        if column.type is ColumnType.TIMESTAMP:
            stamps = stamps.dt.tz_localize("UTC")
        return stamps.where(~is_null, pd.NaT)
    return pd.Series(np.where(is_null, np.nan, values))
