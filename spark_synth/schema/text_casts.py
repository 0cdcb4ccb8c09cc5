"""Text read as a boolean / date / timestamp exactly the way Spark casts it (pure Python; no Spark).

A CSV's columns are text. The fit reads a column declared ``boolean``, ``date``, ``timestamp`` or
``timestamp_ntz`` through Spark (``try_cast(trim(text))``, :func:`~spark_synth.schema.spark_types.parsed_text`);
whatever reads the same text on the pandas side (the evaluation's statistics, through
:mod:`spark_synth.schema.encoding`) must give the same values and the same nulls, or the two
disagree about the very same rows. These functions port Spark 4.0's parsers
(``SparkDateTimeUtils.stringToDate`` / ``parseTimestampString`` / ``stringToTimestamp`` /
``stringToTimestampWithoutTimeZone``, ``StringUtils.isTrueString`` / ``isFalseString``):

* booleans: ``true``/``t``/``yes``/``y``/``1`` and ``false``/``f``/``no``/``n``/``0``, any case;
* dates: ``[+-]yyyy[y…]``, ``…-[m]m``, ``…-[m]m-[d]d``, then anything after a space or a ``T``
  (a timestamp's text is its date);
* timestamps: a date, then ``[h]h[:[m]m[:[s]s[.fraction]]]`` after a space or a ``T`` (fractions
  beyond microseconds truncated), then a zone: ``Z``, ``±h[h][[:]mm[[:]ss]]``, ``UTC``/``GMT``/``UT``
  with or without an offset, a region (``Europe/Paris``) or one of Java's short ids (``PST``);
  a time alone is today's date in that zone (as Spark does);
* leading and trailing spaces and ASCII control characters are ignored; anything else — an
  impossible date such as 2020-02-30, an unknown zone, 24:00 — is None (null), never an error.

Without a zone, a timestamp is read in ``zone`` — UTC, the session time zone of the packaged Spark
profiles; a session set to another zone reads zone-less text in that zone instead. A
``timestamp_ntz`` drops a valid zone (its wall clock stays as written).

:func:`iso_days` (the DP kind counts of ``schema init``) recognises the strict ``YYYY-MM-DD``
form only, and reads it with the same date parser.

One value at a time: :mod:`.scalar_casts` (zones: :mod:`.time_zones`), re-exported here; this module
casts many values at once (through Arrow where the text has a plain form).
"""

from __future__ import annotations

import re
from functools import lru_cache

import numpy as np
import pandas as pd

from .columns import ColumnType
from .scalar_casts import (_CACHE, FALSE_TEXT, SPARK_TRIM, TRUE_TEXT, epoch_day,  # noqa: F401 (re-exported)
                           spark_boolean, spark_date_days, spark_timestamp_micros, text_epoch_seconds)

_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}")
_ARROW_DATE = r"(?s)^(?P<y>[0-9]{4})-(?P<mo>[0-9]{1,2})-(?P<d>[0-9]{1,2})(?:[ T].*)?$"
_ARROW_TIMESTAMP = (r"^(?P<y>[0-9]{4})-(?P<mo>[0-9]{1,2})-(?P<d>[0-9]{1,2})(?:[ T](?P<h>[0-9]{1,2})"
                    r"(?::(?P<mi>[0-9]{1,2})(?::(?P<s>[0-9]{1,2})(?:\.(?P<f>[0-9]{0,6}))?)?)?)?$")
_ARROW_ISO_DATE = r"^[\x00-\x20\x7f]*[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}[\x00-\x20\x7f]*$"


@lru_cache(maxsize=_CACHE)
def _iso_day(text: str) -> float:
    strict = text.strip(" ").strip(SPARK_TRIM)
    days = spark_date_days(strict) if _ISO_DATE.fullmatch(strict) else None
    return np.nan if days is None else float(days)


def iso_days(values: pd.Series) -> np.ndarray:
    """Days since 1970-01-01 of the values that are ISO dates ``YYYY-MM-DD`` (month and day may have
    one digit; spaces around are ignored — forms Spark casts to that date), NaN for everything else
    (a non-string, an impossible date such as 2020-02-30)."""
    out = np.full(len(values), np.nan)
    texts = _texts(values)
    if texts is None:  # not all text: value by value
        return np.fromiter((_iso_day(v) if isinstance(v, str) else np.nan for v in values), dtype=np.float64,
                           count=len(values))
    import pyarrow.compute as pc

    shaped = pc.match_substring_regex(texts, _ARROW_ISO_DATE).fill_null(False).to_numpy(zero_copy_only=False)
    candidates = np.asarray(values, dtype=object)
    for i in np.flatnonzero(shaped):  # only what looks like one is parsed
        out[i] = _iso_day(candidates[i])
    return out


def texts_epoch_seconds(values, kind: ColumnType, zone=0) -> np.ndarray:
    """:func:`text_epoch_seconds` of many values (text or null; NaN for a null), vectorised for the
    plain forms (``YYYY-MM-DD``, and a timestamp's ``YYYY-MM-DD[ T]hh[:mm[:ss[.ffffff]]]`` without a
    zone); anything else goes through the parser one value at a time."""
    out = np.full(len(values), np.nan)
    texts = _texts(values)
    if texts is None or len(values) == 0:
        return np.fromiter((text_epoch_seconds(v, kind, zone) if isinstance(v, str) else np.nan for v in values),
                           dtype=np.float64, count=len(values))
    import pyarrow.compute as pc

    date = kind is ColumnType.DATE
    parts = pc.extract_regex(texts, _ARROW_DATE if date else _ARROW_TIMESTAMP)
    plain = parts.is_valid().to_numpy(zero_copy_only=False)
    if not date and not isinstance(zone, int) and kind is not ColumnType.TIMESTAMP_NTZ:
        plain[:] = False  # a session zone with rules: the parser applies them value by value
    if plain.any():
        def number(name, width):
            return pc.cast(pc.utf8_lpad(parts.field(name), width, padding="0"), "int64").to_numpy()[plain]

        year, month, day = number("y", 4), number("mo", 2), number("d", 2)
        months = ((year - 1970) * 12 + month - 1).astype("datetime64[M]")
        first = months.astype("datetime64[D]").astype(np.int64)
        length = (months + 1).astype("datetime64[D]").astype(np.int64) - first
        fine = (month >= 1) & (month <= 12) & (day >= 1) & (day <= length)
        days = first + day - 1
        if date:
            seconds = days * 86400.0
        else:
            hour, minute, second = number("h", 2), number("mi", 2), number("s", 2)
            fraction = pc.cast(pc.utf8_rpad(parts.field("f"), 6, padding="0"), "int64").to_numpy()[plain]
            fine &= (hour <= 23) & (minute <= 59) & (second <= 59)
            offset = 0 if kind is ColumnType.TIMESTAMP_NTZ else zone
            micros = (days * 86400 + (hour * 60 + minute) * 60 + second - offset) * 1_000_000 + fraction
            seconds = micros / 1_000_000.0
        out[plain] = np.where(fine, seconds, np.nan)
    present = texts.is_valid().to_numpy(zero_copy_only=False)
    candidates = np.asarray(values, dtype=object)
    for i in np.flatnonzero(present & ~plain):
        out[i] = text_epoch_seconds(candidates[i], kind, zone)
    return out


def _texts(values):
    """``values`` as an Arrow string array when every one is text or null; None otherwise."""
    if pd.api.types.infer_dtype(values, skipna=True) not in ("string", "empty"):
        return None
    import pyarrow as pa

    try:
        return pa.array(np.asarray(values, dtype=object), type=pa.string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return None
