"""Each FPT mode's workload plan, from the schema and options alone (public): PMW's groupings,
candidates, hierarchy levels, 1-way and target-pair queries and the one scan that answers them;
LP's measured candidates; and the pools each PMW round draws its candidates from."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ...errors import ParameterError
from ...queries import MarginalQuery
from ...schema import Schema
from ..groupings import cells, coarse_groupings
from ..one_way import one_way_queries
from .config import FptConfig
from .workload import (Candidate, candidates_and_weights, first_shares, hierarchy_candidates, marginal_candidates,
                       marginal_workload)


@dataclass
class _Workload:
    """PMW's public workload, from the schema and options alone: the columns' groupings, the
    candidates and hierarchy levels, the 1-way and target-pair queries; ``scan`` is every exact
    answer the loop can ask, at full resolution where a column is in ranges (the ranges chosen
    after the first releases are sums of these, :meth:`MarginalQuery.coarsen`)."""

    groupings: list
    crosses: list
    weights: dict
    levels: list
    candidates: list
    one_way: list
    target: int | None
    pair_scopes: list
    target_pairs: list
    scan: list
    base_scopes: list
    triple_scopes: list


def _marginal_workload(schema: Schema, o: FptConfig) -> tuple[list, list[str], list]:
    """Both modes' start: the columns' groupings (public: the model works on these groups), the
    checked hierarchy crosses and the workload's marginal scopes."""
    groupings = coarse_groupings(schema, o.numeric_groups)
    crosses = _checked_crosses(schema, o.hierarchy_crosses)
    return groupings, crosses, marginal_workload(schema, o.max_way, o.max_marginal_cells, groupings)


def _pmw_workload(schema: Schema, o: FptConfig) -> _Workload:
    groupings, crosses, workload = _marginal_workload(schema, o)
    target_column = _target_index(schema, groupings)
    triples = []
    if o.target_triples and o.max_way == 2 and target_column is not None:
        triples = target_triples(schema, target_column, o.max_marginal_cells, groupings)
    cross_scopes = [tuple(sorted((h, schema.names.index(c)))) for h, col in enumerate(schema) if col.hierarchy
                    for c in crosses if c != col.name]
    weights = workload_weights(schema, workload + cross_scopes + triples, o.max_marginal_cells, groupings)
    levels, candidates = _workload_candidates(schema, crosses, o.max_marginal_cells, groupings, weights)
    one_way = one_way_queries(schema)
    target = target_column if o.target_share > 0 else None
    view = None if target is None else target_view(groupings, target)
    pair_scopes = [] if target is None else [
        tuple(sorted((j, target))) for j in range(len(schema))
        if j != target and cells(schema, (j, target), view) <= o.max_marginal_cells]
    target_pairs = [MarginalQuery(tuple(schema.names[j] for j in scope), groupings=tuple(view[j] for j in scope))
                    for scope in pair_scopes]
    scan = (one_way + [c.query for c in levels] + target_pairs
            + [_at_full_resolution(c.query, schema, groupings) for c in candidates])
    return _Workload(groupings, crosses, weights, levels, candidates, one_way, target, pair_scopes, target_pairs, scan,
                     workload + cross_scopes, triples)


def workload_weights(schema: Schema, scopes: list, max_cells: int, groupings) -> dict:
    """The candidates' workload weights over ``scopes`` (AIM's), those whose table fits ``max_cells``."""
    weights = candidates_and_weights(scopes)
    return {c: w for c, w in weights.items() if cells(schema, c, groupings) <= max_cells}


def triples_among(triple_scopes: list, columns: set, target: int) -> list:
    """The (column, column, target) scopes whose two columns are both in ``columns``."""
    return [s for s in triple_scopes if all(j == target or j in columns for j in s)]


def _lp_workload(schema: Schema, o: FptConfig) -> tuple[list, list[Candidate], int]:
    """LP mode's groupings, the candidates it measures (1-ways, hierarchy levels, the workload's
    marginals, crossed levels) and how many lead the list as row-count estimates (1-ways and levels)."""
    groupings, crosses, workload = _marginal_workload(schema, o)
    levels, crossed = hierarchy_candidates(schema, crosses, o.max_marginal_cells, groupings, {})
    one_way = [Candidate((j,), query, (None,)) for j, query in enumerate(one_way_queries(schema))]
    wider = dict.fromkeys((c for c in workload if len(c) > 1), 1.0)  # max_way=1: the 1-ways above are the workload
    measured = one_way + levels + marginal_candidates(schema, wider, groupings) + crossed
    return groupings, measured, len(one_way) + len(levels)


class _CandidatePools:
    """Each round's candidates: all of them, or — when there are more than ``limit`` (wide tables:
    d columns give d(d − 1)/2 pairs) — ``limit`` of them drawn afresh each round, the rounds walking
    through a random order of the whole list so every candidate is offered in turn. Public: the
    draw uses a fixed seed and never looks at the data, so the selection among a pool is the
    exponential mechanism on a public set, and a round's cost no longer grows as d²."""

    def __init__(self, candidates: list, limit: int, seed: int = 0):
        self.candidates, self.limit = list(candidates), int(limit)
        self.rng = np.random.default_rng(seed)
        self.order, self.at = np.empty(0, dtype=np.int64), 0

    def next(self) -> list:
        if len(self.candidates) <= self.limit:
            return self.candidates
        picked: set[int] = set()
        while len(picked) < self.limit:
            if self.at >= len(self.order):
                self.order, self.at = self.rng.permutation(len(self.candidates)), 0
            take = self.order[self.at: self.at + self.limit - len(picked)]
            self.at += len(take)
            picked.update(int(i) for i in take)
        return [self.candidates[i] for i in sorted(picked)]


def _workload_candidates(schema: Schema, crosses: list[str], max_cells: int, groupings, weights: dict):
    """(every hierarchy level's 1-way counts, the selectable candidates) over the columns' ``groupings``."""
    levels, crossed = hierarchy_candidates(schema, crosses, max_cells, groupings, weights)
    return levels, marginal_candidates(schema, weights, groupings) + crossed


def _at_full_resolution(query: MarginalQuery, schema: Schema, groupings) -> MarginalQuery:
    """``query`` with the public ranges of its ordered columns undone (hierarchy levels kept)."""
    if query.groupings is None:
        return query
    kept = tuple(None if groupings[schema.names.index(c)] is not None else g for c, g in zip(query.columns, query.groupings))
    return MarginalQuery(query.columns, groupings=kept)


def _shape_key(candidate: Candidate) -> tuple:
    """A candidate's scope and hierarchy levels (its numeric ranges aside)."""
    return candidate.scope, tuple(None if a is None else max(a) + 1 for a in candidate.axes)


def _checked_crosses(schema: Schema, crosses: list | None) -> list[str]:
    """The columns hierarchy levels are crossed with (option ``hierarchy_crosses``), checked against the schema."""
    if not crosses:
        return []
    if not any(column.hierarchy for column in schema):
        raise ParameterError("fpt.hierarchy_crosses", "empty: no column of the schema declares a 'hierarchy'", crosses)
    unknown = [c for c in crosses if c not in schema.names]
    if unknown:
        raise ParameterError("fpt.hierarchy_crosses", f"names of schema columns (unknown: {unknown})", crosses)
    return list(dict.fromkeys(crosses))


def _target_index(schema: Schema, groupings) -> int | None:
    """The schema's target column: categorical, or ordered (a regression target: the model holds it
    in its public ranges, which the first pass then keeps as they are)."""
    if schema.target is None or schema.target not in schema.names:
        return None
    return schema.names.index(schema.target)


def target_view(groupings, target: int) -> list:
    """The groupings of a target pair's axes: every column at full resolution, the target in its
    model groups (its public ranges; None for a categorical target)."""
    return [groupings[target] if j == target else None for j in range(len(groupings))]


def target_pair_weights(schema: Schema, pair_scopes: list, groupings, target: int, split: str) -> list[float]:
    """The target pairs' weights in ``target_share`` (public sizes only): ∝ cells^(2/3) of each pair in
    the model's groups (``model``: a numeric column's public ranges), or at the resolution it is
    measured in (``full``), or equal (``even``)."""
    if split == "even":
        return [1.0] * len(pair_scopes)
    view = groupings if split == "model" else target_view(groupings, target)
    return first_shares([cells(schema, scope, view) for scope in pair_scopes])


def target_triples(schema: Schema, target: int, max_cells: int, groupings) -> list[tuple]:
    """Every (column, column, target) scope whose table fits ``max_cells`` (public sizes only)."""
    others = [j for j in range(len(schema)) if j != target]
    scopes = [tuple(sorted((a, b, target))) for i, a in enumerate(others) for b in others[i + 1:]]
    return [s for s in scopes if cells(schema, s, groupings) <= max_cells]
