"""Merges of codes for tables of two or more columns: public ranges, and groups too sparse for the noise merged away."""

import numpy as np

from spark_synth.engines.groupings import coarse_groupings, merge_sparse_groups
from spark_synth.schema import Column, ColumnType, Schema

SCHEMA = Schema(columns=(
    Column("rate", ColumnType.CONTINUOUS, min=0.0, max=10.0, bins=20, nullable=True),
    Column("colour", ColumnType.CATEGORICAL, categories=("r", "g", "b"), nullable=False),
    Column("size", ColumnType.ORDINAL, categories=("s", "m", "l", "xl"), nullable=False),
))


def _ranges(groups):
    """Each group's consecutive values, in order."""
    groups = np.asarray(groups)
    return [list(np.flatnonzero(groups == g)) for g in range(groups.max() + 1)]


def test_sparse_groups_merge_into_their_next_neighbour_and_rare_categories_into_one():
    rate = np.zeros(21)
    rate[[0, 1]], rate[[8, 9]], rate[19], rate[20] = 0.2, 0.25, 0.005, 0.001  # nulls nearly empty too
    colour = np.array([0.9, 0.05, 0.05])
    size = np.array([0.25, 0.25, 0.25, 0.25])
    width = coarse_groupings(SCHEMA, 4)  # rate: 4 ranges of 5 bins; colour and size: every code
    merged = merge_sparse_groups(SCHEMA, width, [rate, colour, size], 0.1)
    # rate's ranges hold 0.4, 0, 0.5, 0.005: the empty second joins the third, the last joins the one before
    assert _ranges(merged[0][:-1]) == [list(range(0, 5)), list(range(5, 20))]
    assert merged[0][-1] == 2  # the null code keeps a group of its own, however small
    assert merged[1] == (0, 1, 1)  # the two rare colours become one group
    assert merged[2] is None  # nothing to merge: unchanged
    assert merge_sparse_groups(SCHEMA, width, [np.full(21, 1 / 21), np.array([0.9, 0.06, 0.04]), size], 0.05) == [width[0], None, None]
