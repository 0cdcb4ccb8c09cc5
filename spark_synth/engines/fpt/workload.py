"""FPT's workload: public, data-independent sets of counting queries over the schema's codes.

Marginal cliques are tuples of column indices (sorted); a clique is a candidate when its table has
at most ``max_marginal_cells`` cells (a decision from domain sizes only). Candidates carry AIM's
workload weights: how many columns they share with the workload's queries.
"""

from __future__ import annotations

import itertools
import math

from ...schema import Schema

Clique = tuple[int, ...]


def cells(schema: Schema, clique: Clique, groupings=None) -> int:
    """Cells of the clique's measured table (over groups where a column is coarsened)."""
    groupings = groupings or [None] * len(schema)
    return math.prod(schema.columns[j].size if groupings[j] is None else max(groupings[j]) + 1 for j in clique)


def marginal_workload(schema: Schema, max_way: int, max_cells: int, groupings=None) -> list[Clique]:
    """Every set of ``max_way`` columns (all 2-way by default) whose measured table fits ``max_cells``."""
    way = min(max_way, len(schema))
    return [c for c in itertools.combinations(range(len(schema)), way) if cells(schema, c, groupings) <= max_cells]


def candidates_and_weights(workload: list[Clique]) -> dict[Clique, float]:
    """The workload's sub-cliques of two or more columns, each weighted by Σ_{s ∈ workload} |r ∩ s|."""
    closure = sorted({sub for clique in workload for k in range(2, len(clique) + 1)
                      for sub in itertools.combinations(clique, k)})
    return {r: float(sum(len(set(r) & set(s)) for s in workload)) for r in closure}


def coarse_groupings(schema: Schema, max_groups: int) -> list[tuple[int, ...] | None]:
    """Per column, a public merge of its ordered values into at most ``max_groups`` consecutive
    ranges (the null code keeps a group of its own) for marginals of two or more columns — or None
    for categorical columns and columns already that small. 1-way histograms stay at full resolution."""
    out = []
    for column in schema:
        ordered = column.type.value != "categorical"
        if not ordered or column.n_values <= max_groups:
            out.append(None)
            continue
        groups = [code * max_groups // column.n_values for code in range(column.n_values)]
        out.append(tuple(groups + ([max_groups] if column.nullable else [])))
    return out
