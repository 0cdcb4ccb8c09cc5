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

import numpy as np
import pandas as pd

from ..privacy.unit import PrivacyUnit
from .answers import _quoted

_RANK = "__spark_synth_unit_rank"


def bound_contributions(df, unit: PrivacyUnit, salt: int):
    """``df`` (Spark) with at most ``unit.max_rows`` rows per value of ``unit.column`` (one shuffle by
    unit). ``salt`` is secret and fresh per fit; a row-level unit returns ``df`` unchanged."""
    if unit.is_row:
        return df
    from pyspark.sql import Window
    from pyspark.sql import functions as F

    priority = F.xxhash64(F.lit(int(salt)), *[F.col(_quoted(c)) for c in df.columns])
    window = Window.partitionBy(F.col(_quoted(unit.column))).orderBy(priority)
    return df.withColumn(_RANK, F.row_number().over(window)).where(F.col(_RANK) <= unit.max_rows).drop(_RANK)


def bound_contributions_frame(frame: pd.DataFrame, unit: PrivacyUnit, salt: int) -> pd.DataFrame:
    """The same over a pandas DataFrame (single-machine use, tests, the audit)."""
    if unit.is_row:
        return frame
    key = f"{int(salt) & (2**64 - 1):016x}"[:16]
    priority = pd.util.hash_pandas_object(frame, index=False, hash_key=key).to_numpy()
    order = np.lexsort((priority,))
    ranked = frame.iloc[order]
    rank = ranked.groupby(unit.column, dropna=False, sort=False).cumcount().to_numpy()
    return ranked[rank < unit.max_rows].sort_index()
