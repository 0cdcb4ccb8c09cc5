"""Public coarsenings of columns for tables of two or more columns (FPT's workload, DGM's
association tables): decisions from the schema's domains only."""

from __future__ import annotations

import math

import numpy as np

from ..schema import Schema


def cells(schema: Schema, clique: tuple[int, ...], groupings=None) -> int:
    """Cells of the clique's measured table (over groups where a column is coarsened)."""
    groupings = groupings or [None] * len(schema)
    return math.prod(schema.columns[j].size if groupings[j] is None else max(groupings[j]) + 1 for j in clique)


def coarse_groupings(schema: Schema, max_groups: int) -> list[tuple[int, ...] | None]:
    """Per column, a public merge of its ordered values into at most ``max_groups`` consecutive
    ranges (the null code keeps a group of its own) for marginals of two or more columns — or None
    for categorical columns, columns with a hierarchy (their levels are the coarser views) and
    columns already that small. Numeric ranges are equal-width over the column's [min, max] (a
    bin joins the range holding its centre), so they are the ranges users bin by; ordinal columns
    merge consecutive categories. 1-way histograms stay at full resolution."""
    out = []
    for column in schema:
        if not ordered_codes(column) or column.hierarchy or column.n_values <= max_groups:
            out.append(None)
            continue
        if column.type.is_discrete:
            groups = np.arange(column.n_values) * max_groups // column.n_values
        else:
            edges = column.bin_edges
            centres = (edges[:-1] + edges[1:]) / 2
            width = (column.max - column.min) or 1.0
            groups = np.clip(np.floor((centres - column.min) / width * max_groups), 0, max_groups - 1)
        groups = np.unique(groups, return_inverse=True)[1]  # numbered 0..G−1, each used
        out.append(tuple(int(g) for g in groups) + ((int(groups.max()) + 1,) if column.nullable else ()))
    return out


def merge_sparse_groups(schema: Schema, groupings, distributions, min_share: float) -> list[tuple[int, ...] | None]:
    """``groupings`` (None: every code its own group) with the groups that hold less than
    ``min_share`` under ``distributions`` (per column, a distribution over its codes — DP 1-way
    releases, so the merge is post-processing) merged away, as MST compresses its domains: in an
    ordered column a run of such groups joins the next group that holds more (the last run joins
    the one before, and when none holds enough, all values are one group; the null code stays a
    group of its own); in a categorical column they become one group together. A column with
    nothing to merge keeps its grouping."""
    out = []
    for column, grouping, shares in zip(schema, groupings, distributions):
        codes = np.arange(column.size) if grouping is None else np.asarray(grouping)
        shares = np.clip(np.asarray(shares, dtype=np.float64), 0.0, None)
        shares = shares / shares.sum() if shares.sum() > 0 else np.full(column.size, 1.0 / column.size)
        held = np.bincount(codes, weights=shares, minlength=int(codes.max()) + 1)
        ordered = ordered_codes(column)
        groups = np.arange(len(held))
        if ordered:
            values = np.unique(codes[:ordered])  # the ordered groups, in order (the null group, if any, after them)
            big = values[held[values] >= min_share]
            big = big if len(big) else values[-1:]  # none holds enough: all in one
            if len(big) == len(values):
                out.append(grouping)
                continue
            # each small group joins the next big one, or the last big one at the end
            groups[values] = big[np.minimum(np.searchsorted(big, values), len(big) - 1)]
        else:
            small = np.flatnonzero(held < min_share)
            if len(small) < 2:
                out.append(grouping)
                continue
            groups[small] = small[0]
        merged = np.unique(groups, return_inverse=True)[1][codes]
        out.append(tuple(int(g) for g in merged))
    return out


def ordered_codes(column) -> int:
    """How many of the column's codes are ordered values (all but the null code of a numeric or
    ordinal column; 0 for a categorical one)."""
    return 0 if column.type.value == "categorical" else column.n_values
