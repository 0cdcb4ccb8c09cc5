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
"""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache

import numpy as np
import pandas as pd

from .columns import ColumnType

#: Characters Spark's own trim drops from both ends (``UTF8String.isWhitespaceOrISOControl`` on ASCII).
SPARK_TRIM = "".join(map(chr, range(0x21))) + "\x7f"
#: What Spark's cast to boolean reads as true / false (after trimming, in lower case).
TRUE_TEXT = frozenset({"t", "true", "y", "yes", "1"})
FALSE_TEXT = frozenset({"f", "false", "n", "no", "0"})
_CACHE = 1 << 16
_MICROS_PER_DAY = 86_400_000_000
_INT64 = 1 << 63
_INT32 = 1 << 31
_ISO_DATE = re.compile(r"[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}")
_SINGLE_HOUR = re.compile(r"([+-])([0-9]):")
_SINGLE_MINUTE = re.compile(r"([+-])([0-9][0-9]):([0-9])$")
_PLAIN_TIMESTAMP = re.compile(r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
                              r"(?:[ T]([0-9]{1,2})(?::([0-9]{1,2})(?::([0-9]{1,2})(?:\.([0-9]{0,6}))?)?)?)?")
_ARROW_DATE = r"(?s)^(?P<y>[0-9]{4})-(?P<mo>[0-9]{1,2})-(?P<d>[0-9]{1,2})(?:[ T].*)?$"
_ARROW_TIMESTAMP = (r"^(?P<y>[0-9]{4})-(?P<mo>[0-9]{1,2})-(?P<d>[0-9]{1,2})(?:[ T](?P<h>[0-9]{1,2})"
                    r"(?::(?P<mi>[0-9]{1,2})(?::(?P<s>[0-9]{1,2})(?:\.(?P<f>[0-9]{0,6}))?)?)?)?$")
_ARROW_ISO_DATE = r"^[\x00-\x20\x7f]*[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}[\x00-\x20\x7f]*$"
_REGION = re.compile(r"[A-Za-z][A-Za-z0-9~/._+-]+")
#: java.time.ZoneId.SHORT_IDS, which Spark's zone lookup accepts.
_SHORT_IDS = {
    "EST": "-05:00", "HST": "-10:00", "MST": "-07:00", "ACT": "Australia/Darwin", "AET": "Australia/Sydney",
    "AGT": "America/Argentina/Buenos_Aires", "ART": "Africa/Cairo", "AST": "America/Anchorage",
    "BET": "America/Sao_Paulo", "BST": "Asia/Dhaka", "CAT": "Africa/Harare", "CNT": "America/St_Johns",
    "CST": "America/Chicago", "CTT": "Asia/Shanghai", "EAT": "Africa/Addis_Ababa", "ECT": "Europe/Paris",
    "IET": "America/Indiana/Indianapolis", "IST": "Asia/Kolkata", "JST": "Asia/Tokyo", "MIT": "Pacific/Apia",
    "NET": "Asia/Yerevan", "NST": "Pacific/Auckland", "PLT": "Asia/Karachi", "PNT": "America/Phoenix",
    "PRT": "America/Puerto_Rico", "PST": "America/Los_Angeles", "SST": "Pacific/Guadalcanal",
    "VST": "Asia/Ho_Chi_Minh",
}


def _span(text: str) -> tuple[str, int, int]:
    """``trim(text)`` (spaces, as the fit's ``F.trim``) and the bounds Spark's parser then reads."""
    text = text.strip(" ")
    start = len(text) - len(text.lstrip(SPARK_TRIM))
    end = max(start, len(text.rstrip(SPARK_TRIM)))
    return text, start, end


def spark_boolean(text: str) -> bool | None:
    """``try_cast(trim(text) AS boolean)``: True, False or None."""
    word = text.strip(" ").strip(SPARK_TRIM).lower()
    return True if word in TRUE_TEXT else False if word in FALSE_TEXT else None


def _leap(year: int) -> bool:
    return year % 4 == 0 and (year % 100 != 0 or year % 400 == 0)


def epoch_day(year: int, month: int, day: int) -> int | None:
    """Days since 1970-01-01 of a proleptic Gregorian date (``LocalDate.of``); None if there is none."""
    if not 1 <= month <= 12 or day < 1 or abs(year) > 999_999_999:
        return None
    length = (29 if _leap(year) else 28) if month == 2 else 30 if month in (4, 6, 9, 11) else 31
    if day > length:
        return None
    y = year - (month <= 2)
    era = y // 400
    yoe = y - era * 400
    doy = (153 * (month + (-3 if month > 2 else 9)) + 2) // 5 + day - 1
    return era * 146097 + yoe * 365 + yoe // 4 - yoe // 100 + doy - 719468


@lru_cache(maxsize=_CACHE)
def spark_date_days(text: str) -> int | None:
    """``try_cast(trim(text) AS date)`` as days since 1970-01-01, or None (Spark's ``stringToDate``)."""
    s, j, end = _span(text)
    if j == end:
        return None
    segments, sign, i, value, digits = [1, 1, 1], 1, 0, 0, 0
    if s[j] in "+-":
        sign = -1 if s[j] == "-" else 1
        j += 1
    while j < end and i < 3 and s[j] not in " T":
        c = s[j]
        if i < 2 and c == "-":
            if not _date_digits(i, digits):
                return None
            segments[i], value, digits, i = value, 0, 0, i + 1
        elif "0" <= c <= "9":
            value, digits = value * 10 + ord(c) - 48, digits + 1
        else:
            return None
        j += 1
    if not _date_digits(i, digits) or (i < 2 and j < end):  # `yyyy` and `yyyy-[m]m` must be all there is
        return None
    segments[i] = value
    days = epoch_day(sign * segments[0], segments[1], segments[2])
    return days if days is not None and -_INT32 <= days < _INT32 else None


def _date_digits(segment: int, digits: int) -> bool:
    return 4 <= digits <= 7 if segment == 0 else 0 < digits <= 2


def _timestamp_digits(segment: int, digits: int) -> bool:
    if segment == 6:
        return True
    if segment == 0:
        return 4 <= digits <= 6
    if segment == 7:
        return digits <= 2
    return 0 < digits <= 2


@lru_cache(maxsize=_CACHE)
def _timestamp_parts(text: str):
    """Spark's ``parseTimestampString``: ``(fields, zone, just_time)`` — fields year, month, day, hour,
    minute, second, microsecond; zone None (none written), an offset in seconds or a ``ZoneInfo`` —
    or None when the text is not a timestamp (an unknown zone included)."""
    s, j, end = _span(text)
    if j == end:
        return None
    plain = _PLAIN_TIMESTAMP.fullmatch(s, j, end)
    if plain is not None:  # the common form, without a sign or a zone: what the loop below reads it as
        year, month, day, hour, minute, second, fraction = plain.groups()
        return ((int(year), int(month), int(day), int(hour or 0), int(minute or 0), int(second or 0),
                 int((fraction or "").ljust(6, "0"))), None, False)
    segments = [1, 1, 1, 0, 0, 0, 0, 0, 0]
    i = value = digits = fraction_digits = 0
    zone_text, just_time, year_sign = None, False, None
    if s[j] in "+-":
        year_sign = -1 if s[j] == "-" else 1
        j += 1
    while j < end:
        c = s[j]
        if "0" <= c <= "9":
            if i == 6:
                fraction_digits += 1
            if i != 6 or digits < 6:  # beyond microseconds: truncated
                value = value * 10 + ord(c) - 48
            digits += 1
            j += 1
            continue
        if j == 0 and c == "T":
            just_time, i = True, i + 3
        elif i < 2:
            if c == "-":
                if not _timestamp_digits(i, digits):
                    return None
                segments[i], value, digits, i = value, 0, 0, i + 1
            elif i == 0 and c == ":" and year_sign is None:  # a time alone
                if not _timestamp_digits(3, digits):
                    return None
                just_time, segments[3], value, digits, i = True, value, 0, 0, 4
            else:
                return None
        elif i == 2 or i == 3 or i == 4:  # the date ends at a space or a T; hours and minutes at a colon
            if c not in (" T" if i == 2 else ":") or not _timestamp_digits(i, digits):
                return None
            segments[i], value, digits, i = value, 0, 0, i + 1
        elif i == 5 or i == 6:
            if not _timestamp_digits(i, digits):
                return None
            segments[i], value, digits, i = value, 0, 0, i + 1
            if not (c == "." and i == 6):  # the rest is the zone
                zone_text, j = s[j:end], end - 1
                if i == 6:
                    i += 1
        elif i < len(segments) and c in ": ":
            if not _timestamp_digits(i, digits):
                return None
            segments[i], value, digits, i = value, 0, 0, i + 1
        else:
            return None
        j += 1
    if not _timestamp_digits(i, digits):
        return None
    segments[i] = value
    segments[6] *= 10 ** max(0, 6 - fraction_digits)
    zone = None
    if zone_text is not None:
        zone = _zone(zone_text.strip("".join(map(chr, range(0x21)))))
        if zone is None:
            return None
    segments[0] *= year_sign or 1
    return tuple(segments[:7]), zone, just_time


@lru_cache(maxsize=1024)
def _zone(name: str):
    """Spark's ``getZoneId``: an offset in seconds, a ``ZoneInfo``, or None (not a zone)."""
    name = _SINGLE_HOUR.sub(r"\g<1>0\2:", name, count=1)  # ±h:mm, as before Spark 3.0
    name = _SINGLE_MINUTE.sub(r"\1\2:0\3", name, count=1)  # ±hh:m
    name = _SHORT_IDS.get(name, name)
    if len(name) <= 1 or name[0] in "+-":
        return _offset(name)
    for prefix in ("UTC", "GMT", "UT"):
        if name.startswith(prefix):
            if len(name) == len(prefix):
                return 0
            if name[len(prefix)] in "+-":
                return _offset(name[len(prefix):])
            break
    return _region(name)


def _offset(text: str) -> int | None:
    """``java.time.ZoneOffset.of``: ``Z``, ``±h``, ``±hh``, ``±hh:mm``, ``±hhmm``, ``±hh:mm:ss``, ``±hhmmss``."""
    if text == "Z":
        return 0
    if len(text) == 2:
        text = text[0] + "0" + text[1]
    layouts = {3: (1, None, None), 5: (1, 3, None), 6: (1, 4, None), 7: (1, 3, 5), 9: (1, 4, 7)}
    if len(text) not in layouts or text[0] not in "+-":
        return None
    parts = []
    for at in layouts[len(text)]:
        if at is None:
            parts.append(0)
            continue
        pair = text[at:at + 2]
        colon = len(text) in (6, 9) and at > 1
        if (colon and text[at - 1] != ":") or not ("0" <= pair[0] <= "9" and "0" <= pair[1] <= "9"):
            return None
        parts.append(int(pair))
    hours, minutes, seconds = parts
    if hours > 18 or minutes > 59 or seconds > 59 or (hours == 18 and (minutes or seconds)):
        return None
    total = hours * 3600 + minutes * 60 + seconds
    return -total if text[0] == "-" else total


def _region(name: str):
    if not _REGION.fullmatch(name) or name not in _regions():
        return None
    from zoneinfo import ZoneInfo

    try:
        return ZoneInfo(name)
    except Exception:  # a broken or missing zone file: not a zone here
        return None


@lru_cache(maxsize=1)
def _regions() -> frozenset:
    import zoneinfo

    return frozenset(zoneinfo.available_timezones())


def spark_timestamp_micros(text: str, kind: ColumnType, zone=0) -> int | None:
    """``try_cast(trim(text) AS timestamp)`` as microseconds since 1970-01-01 UTC (``kind``
    ``timestamp``; text without a zone read in ``zone``: an offset in seconds or a ``tzinfo``), or
    ``AS timestamp_ntz`` as microseconds since 1970-01-01 00:00 on the wall clock; None if Spark's
    cast gives null."""
    parts = _timestamp_parts(text)
    if parts is None:
        return None
    (year, month, day, hour, minute, second, micro), written, just_time = parts
    if hour > 23 or minute > 59 or second > 59:
        return None
    clock = ((hour * 60 + minute) * 60 + second) * 1_000_000 + micro
    if kind is ColumnType.TIMESTAMP_NTZ:
        if just_time:
            return None
        days = epoch_day(year, month, day)
        return _micros(None if days is None else days * _MICROS_PER_DAY + clock)
    zone = zone if written is None else written
    if just_time:
        today = dt.datetime.now(dt.timezone(dt.timedelta(seconds=zone)) if isinstance(zone, int) else zone).date()
        year, month, day = today.year, today.month, today.day
    days = epoch_day(year, month, day)
    if days is None:
        return None
    local = days * _MICROS_PER_DAY + clock
    if isinstance(zone, int):
        return _micros(local - zone * 1_000_000)
    if not 1 <= year <= 9999:  # the same day of a year with the same calendar (it repeats every 400 years)
        year = year % 400 + (400 if year < 1 else 9600)  # before a zone's first rule, or after its last one
    try:  # a wall-clock time in a gap or an overlap counts with the offset before the transition, as in Java
        offset = dt.datetime(year, month, day, hour, minute, second, micro, tzinfo=zone).utcoffset()
    except (OverflowError, ValueError):
        return None
    return _micros(local - (offset // dt.timedelta(microseconds=1)))


def _micros(value: int | None) -> int | None:
    return value if value is not None and -_INT64 <= value < _INT64 else None


def text_epoch_seconds(text: str, kind: ColumnType, zone=0) -> float:
    """Text of a ``date`` column as days × 86400, of a ``timestamp`` / ``timestamp_ntz`` column as
    seconds since the epoch (see :func:`spark_timestamp_micros`); NaN where Spark's cast gives null."""
    if kind is ColumnType.DATE:
        days = spark_date_days(text)
        return np.nan if days is None else days * 86400.0
    micros = spark_timestamp_micros(text, kind, zone)
    return np.nan if micros is None else micros / 1_000_000.0


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
