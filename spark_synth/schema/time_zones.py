"""Spark's time-zone lookup (``getZoneId``), in pure Python: the zone written after a timestamp's
text as an offset in seconds, a ``ZoneInfo``, or None (not a zone)."""

from __future__ import annotations

import re
from functools import lru_cache

_SINGLE_HOUR = re.compile(r"([+-])([0-9]):")
_SINGLE_MINUTE = re.compile(r"([+-])([0-9][0-9]):([0-9])$")
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
