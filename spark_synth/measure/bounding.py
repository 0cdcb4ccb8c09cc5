"""Contribution bounding: keep at most K rows of each privacy unit, before anything is measured.

Which rows a unit keeps is decided by a salted hash of each row's values: a unit's kept rows are its
K rows of smallest ``hash(salt, row)``. That choice depends on the unit's own rows and the salt
only — not on row order, partitioning or other units — so adding or removing one unit leaves every
other unit's kept rows unchanged, and the bounded tables of two neighbours differ by at most K rows
(the stability the mechanisms' K × sensitivity relies on; :mod:`spark_synth.privacy.unit`). With a
fresh random salt per fit the kept rows are a uniform random subset of the unit's distinct rows,
whatever their values (identical rows are interchangeable: which copies are kept does not change
the table). Rows whose unit column is null form one unit, bounded like the others.

This is the only step that groups rows by unit; the measure layer then answers queries over the
bounded rows exactly as over a row-level table.
"""

from __future__ import annotations

import hashlib

import numpy as np
import pandas as pd

from ..privacy.unit import PrivacyUnit
from .answers import _quoted

_RANK = "__spark_synth_unit_rank"


def bound_contributions(df, unit: PrivacyUnit, salt: int):
    """``df`` (Spark) with at most ``unit.max_rows`` rows per value of ``unit.column`` (one shuffle by
    unit). ``salt`` is secret and fresh per fit; a row-level unit returns ``df`` unchanged.

    The priority hashes each column's null flag with its value (``xxhash64`` skips nulls, so
    ``(None, 'a')`` and ``('a', None)`` would otherwise tie), and ties — identical rows, or a 64-bit
    collision — are broken by the row's values, so the kept rows never follow row order."""
    if unit.is_row:
        return df
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    columns = [F.col(_quoted(c)) for c in df.columns]
    priority = F.xxhash64(F.lit(int(salt)), *[c.isNull() for c in columns], *columns)
    window = Window.partitionBy(F.col(_quoted(unit.column))).orderBy(priority, *[c.asc_nulls_first() for c in columns])
    return df.withColumn(_RANK, F.row_number().over(window)).where(F.col(_RANK) <= unit.max_rows).drop(_RANK)


def bound_contributions_frame(frame: pd.DataFrame, unit: PrivacyUnit, salt: int) -> pd.DataFrame:
    """The same over a pandas DataFrame (single-machine use, tests, the audit): each row's priority
    is a salted BLAKE2b hash of its own values' ``repr`` (so ``True``, ``1`` and ``1.0`` differ, and no
    other row matters), ties broken by that text."""
    if unit.is_row:
        return frame
    key = int(salt).to_bytes(16, "little", signed=True)
    texts = [repr(tuple(row)) for row in frame.itertuples(index=False, name=None)]
    priority = np.array([int.from_bytes(hashlib.blake2b(t.encode(), digest_size=8, key=key).digest(), "little")
                         for t in texts], dtype=np.uint64)
    order = np.lexsort((np.array(texts, dtype=object), priority))
    ranked = frame.iloc[order]
    rank = ranked.groupby(unit.column, dropna=False, sort=False).cumcount().to_numpy()
    return ranked[rank < unit.max_rows].sort_index()
