"""Packaged defaults: Spark profiles (``spark/``) and engine defaults (``engines/``).

They ship inside the wheel, so a cluster or notebook install needs no repository. A directory named
by ``$SPARK_SYNTH_CONF`` (laid out the same way: ``spark/NAME.yaml``, ``engines/ENGINE.yaml``)
overrides them file by file; names it does not hold fall back to the packaged ones.
"""

from __future__ import annotations

import os
from pathlib import Path

#: The packaged defaults (this folder).
PACKAGED = Path(__file__).resolve().parent
#: The kinds of configuration file, one folder each.
KINDS = ("spark", "engines")


def override_dir() -> Path | None:
    """``$SPARK_SYNTH_CONF`` when set, else None."""
    value = os.environ.get("SPARK_SYNTH_CONF")
    return Path(value) if value else None


def find(kind: str, name: str) -> Path | None:
    """The file ``KIND/NAME.yaml``: from ``$SPARK_SYNTH_CONF`` when it holds one, else packaged, else None."""
    if kind not in KINDS:
        raise ValueError(f"configuration kind must be one of {KINDS}, got {kind!r}")
    for folder in (override_dir(), PACKAGED):
        if folder is not None and (folder / kind / f"{name}.yaml").is_file():
            return folder / kind / f"{name}.yaml"
    return None


def names(kind: str) -> list[str]:
    """Every name ``find(kind, name)`` resolves, sorted."""
    found = set()
    for folder in (override_dir(), PACKAGED):
        if folder is not None:
            found |= {p.stem for p in (folder / kind).glob("*.yaml")}
    return sorted(found)
