"""FPT's workload: public, data-independent sets of counting queries over the schema's codes.

Marginal cliques are tuples of column indices (sorted); a clique is a candidate when its table has
at most ``max_marginal_cells`` cells (a decision from domain sizes only). Candidates carry AIM's
workload weights: how many columns they share with the workload's queries.
"""

from __future__ import annotations

import itertools
from collections import Counter
from dataclasses import dataclass

from ...queries import MarginalQuery
from ...schema import Schema
from ..groupings import cells

Clique = tuple[int, ...]


@dataclass(frozen=True)
class Candidate:
    """A counting query of the workload: a marginal over model variables ``scope`` whose axis k is
    summed by ``axes[k]`` (a public map of model codes to groups: a hierarchy level) or kept (None)."""

    scope: Clique
    query: MarginalQuery
    axes: tuple
    weight: float = 1.0


def marginal_workload(schema: Schema, max_way: int, max_cells: int, groupings=None) -> list[Clique]:
    """Every set of ``max_way`` columns (all 2-way by default) whose measured table fits ``max_cells``."""
    way = min(max_way, len(schema))
    return [c for c in itertools.combinations(range(len(schema)), way) if cells(schema, c, groupings) <= max_cells]


def candidates_and_weights(workload: list[Clique]) -> dict[Clique, float]:
    """The workload's sub-cliques of two or more columns, each weighted by Σ_{s ∈ workload} |r ∩ s|."""
    closure = sorted({sub for clique in workload for k in range(2, len(clique) + 1)
                      for sub in itertools.combinations(clique, k)})
    # Σ_s |r ∩ s| = Σ_{v ∈ r} #{s : v ∈ s}: linear in the workload, not |closure| × |workload|
    holding = Counter(v for s in workload for v in s)
    return {r: float(sum(holding[v] for v in r)) for r in closure}


def marginal_candidates(schema: Schema, weights: dict[Clique, float], groupings) -> list[Candidate]:
    """Each weighted clique as a marginal over the model's codes (numeric columns in their groups)."""
    return [Candidate(c, _marginal(schema, c, groupings), (None,) * len(c), w) for c, w in weights.items()]


def hierarchy_candidates(schema: Schema, crosses: list[str], max_cells: int, groupings,
                         weights: dict[Clique, float]) -> tuple[list[Candidate], list[Candidate]]:
    """Census-style counts of every hierarchy level: (the levels' 1-way counts, always measured;
    each level crossed with each column named in ``crosses``, candidates when within ``max_cells``).
    A cross's weight is its scope's workload weight (1 when the scope is not in the workload)."""
    alone, crossed = [], []
    for h, column in enumerate(schema):
        for level, grouping in column.hierarchy_groupings():
            alone.append(Candidate((h,), MarginalQuery((column.name,), name=f"marginal[{column.name}@{level}]",
                                                      groupings=(grouping,)), (grouping,)))
            for name in crosses:
                c = schema.names.index(name)
                if c == h or (max(grouping) + 1) * cells(schema, (c,), groupings) > max_cells:
                    continue
                scope = (min(h, c), max(h, c))
                axes = tuple(grouping if j == h else None for j in scope)
                query_groupings = tuple(grouping if j == h else groupings[j] for j in scope)
                label = ", ".join(f"{column.name}@{level}" if j == h else _label(schema, j, groupings) for j in scope)
                query = MarginalQuery(tuple(schema.names[j] for j in scope), name=f"marginal[{label}]", groupings=query_groupings)
                crossed.append(Candidate(scope, query, axes, weights.get(scope, 1.0)))
    return alone, crossed


def _marginal(schema: Schema, clique: Clique, groupings) -> MarginalQuery:
    return MarginalQuery(tuple(schema.names[j] for j in clique), groupings=tuple(groupings[j] for j in clique))


def _label(schema: Schema, j: int, groupings) -> str:
    name = schema.names[j]
    return name if groupings[j] is None else f"{name}/{max(groupings[j]) + 1}"


def first_shares(cells_per_histogram: list[int]) -> list[float]:
    """Budget weights of the first pass's histograms, ∝ cells^(2/3): the split of a fixed ρ that
    minimises the sum of their expected L1 errors (each ∝ cells/√ρ), from public sizes only."""
    return [float(c) ** (2.0 / 3.0) for c in cells_per_histogram]
