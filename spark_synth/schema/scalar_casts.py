"""One text read as a boolean / date / timestamp exactly the way Spark casts it (pure Python; no
Spark): ports of Spark's parsers, value by value (see :mod:`.text_casts` for the forms they read)."""

from __future__ import annotations

import datetime as dt
import re
from functools import lru_cache

import numpy as np

from .columns import ColumnType
from .time_zones import _zone

#: Characters Spark's own trim drops from both ends (``UTF8String.isWhitespaceOrISOControl`` on ASCII).
SPARK_TRIM = "".join(map(chr, range(0x21))) + "\x7f"
#: What Spark's cast to boolean reads as true / false (after trimming, in lower case).
TRUE_TEXT = frozenset({"t", "true", "y", "yes", "1"})
FALSE_TEXT = frozenset({"f", "false", "n", "no", "0"})
_CACHE = 1 << 16
_MICROS_PER_DAY = 86_400_000_000
_INT64 = 1 << 63
_INT32 = 1 << 31
_PLAIN_TIMESTAMP = re.compile(r"([0-9]{4})-([0-9]{1,2})-([0-9]{1,2})"
                              r"(?:[ T]([0-9]{1,2})(?::([0-9]{1,2})(?::([0-9]{1,2})(?:\.([0-9]{0,6}))?)?)?)?")


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
