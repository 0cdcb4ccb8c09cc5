"""FPT engine: private multiplicative weights over a tree decomposition (default), or an LP.

PMW mode (``mode="pmw"``), an adaptive select–measure–refit loop on the measurement oracle:

SELECT   all 1-way histograms (share ``one_way_share`` of ρ) and, when the schema names a
         categorical target, every column's 2-way table with the target at full resolution
         (``target_share``: they let sampled ranges and merged codes be refined given the target,
         as a classifier trained on the output needs); then each round privately picks the
         candidate marginal the current model answers worst (exponential mechanism on the weighted
         L1 error minus its expected noise, AIM's score; sensitivity max weight), among candidates
         whose addition keeps the junction tree's largest bag within a public cell cap;
MEASURE  the selected marginal with discrete Gaussian noise (the exact answers of the whole candidate
         workload come from one Spark scan, kept inside the oracle);
FIT      mirror descent on the log-potentials of a Gibbs distribution over all noisy measurements so
         far (warm-started), exact sum-product on the junction tree (:mod:`.graphical`); when a
         round's measurement barely moves the model the per-round budget grows (annealing) until
         the budget is spent;
GENERATE exact top-down sampling from the junction tree, on the executors (post-processing).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import torch

from ...errors import ParameterError
from ...logs import layer
from ...privacy import NoisyMeasurement, split_rho
from ...queries import MarginalQuery
from ...schema import Schema
from ..base import Engine, MeasurementOracle, TaskRunner
from ..groupings import cells, coarse_groupings, ordered_codes
from ..postprocess import estimate_total, probabilities_from_counts
from ..torch_threads import torch_threads
from .code_shares import (absent_nulls, pooled_counts, shrunk_shares, swamped_columns, target_ratios,
                          within_group_shares, without)
from .compression import compress, refine
from .config import ONE_WAY_SHARE, ONE_WAY_SHARE_MIN, FptConfig
from .estimation import MirrorDescent, Observation, project
from . import lp
from .graphical import JunctionTree
from .lp import Target
from .model import FptModel
from .workload import (Candidate, candidates_and_weights, first_shares, hierarchy_candidates, marginal_candidates,
                       marginal_workload)

_log = layer("engines")


#: The model-size cap's growth: cells of the largest bag allowed per share of the budget spent (AIM's
#: schedule; until 2026-12-06 it was max_model_cells, 2 M).
MODEL_CELLS_PER_BUDGET = 2_000_000
#: A candidate whose model answer (a marginal across bags) would build a larger table is not offered.
ANSWER_CELLS = 2_000_000


@dataclass
class Round:
    """What one round did (public: names and budgets only)."""

    selected: str
    rho: float
    width: int


class FptEngine(Engine):
    """Treewidth-bounded private synthetic data for counting-query workloads."""

    name = "fpt"
    requires = (("torch", "torch"),)
    model_class = FptModel
    config_class = FptConfig

    def fit(self, schema: Schema, oracle: MeasurementOracle, tasks: TaskRunner) -> FptModel:
        return self.fit_measurements(schema, self.measure(schema, oracle))

    def measure(self, schema: Schema, oracle: MeasurementOracle) -> "Measured":
        """Every measurement (PMW: the whole select–measure–refit loop, which needs the model between
        rounds); what :meth:`fit_measurements` needs, noisy values and public facts only."""
        with torch_threads(self.options.cpu_threads):
            return self._measure_lp(schema, oracle) if self.options.mode == "lp" else self._measure_pmw(schema, oracle)

    def fit_measurements(self, schema: Schema, measured: "Measured") -> FptModel:
        """The final fit from the measurements (post-processing: PMW's final refit, or the LP)."""
        with torch_threads(self.options.cpu_threads):
            if measured.lp_targets is not None:
                return self._solve_lp(schema, measured)
            device = self._device()
            observations = [ob.to(device) for ob in measured.observations]
            tree = JunctionTree(measured.sizes, [ob.scope for ob in observations])
            fitter = MirrorDescent(tree, measured.total, device, measured.potentials,
                                   dtype=getattr(torch, self.options.fit_precision))
            fitter.step = measured.step
            fitter.fit(observations, self.options.final_iterations)
            _log.info("fpt: final fit, %d mirror-descent steps, error %.2f sigma per measured cell (RMS)",
                      len(fitter.history) - 1, fitter.error_in_sigmas())
            model = FptModel([c.size for c in schema], measured.sizes, without(fitter.potentials(), measured.absent), measured.total,
                             measured.refinements, summary=measured.summary, target=measured.target)
            return model.record_loss_curves({"round_loss": measured.round_losses, "final_loss": fitter.history})

    def _device(self):
        choice = self.options.device
        return torch.device("cuda" if choice == "cuda" or (choice == "auto" and torch.cuda.is_available()) else "cpu")

    def planned_queries(self, schema: Schema) -> list:
        """The whole workload's exact answers, asked in one scan (PMW: the first pass and every
        candidate at full resolution; LP: everything it measures)."""
        if self.options.mode == "lp":
            return [c.query for c in _lp_workload(schema, self.options)[1]]
        return _pmw_workload(schema, self.options).scan

    def _measure_pmw(self, schema: Schema, oracle: MeasurementOracle) -> "Measured":
        o, device = self.options, self._device()
        rho = oracle.rho_total
        w = _pmw_workload(schema, o)
        groupings, crosses, weights, levels, candidates = w.groupings, w.crosses, w.weights, w.levels, w.candidates
        one_way, target, pair_scopes, target_pairs = w.one_way, w.target, w.pair_scopes, w.target_pairs
        oracle.prepare(w.scan)  # every exact answer in one scan

        first = one_way + [c.query for c in levels]
        first_cells = [cells(schema, (j,), groupings) for j in range(len(schema))] + [max(c.axes[0]) + 1 for c in levels]
        paired = []
        if pair_scopes:  # the target pairs first, with their own share, split the same way
            paired = oracle.measure_many(list(zip(target_pairs, split_rho(
                o.target_share * rho, first_shares([cells(schema, scope) for scope in pair_scopes])))))
        # a unit of K rows: σ K times a row's, so the rule plans on K-row units (total / K of them)
        one_way_share = _one_way_share(o, first_cells, estimate_total(paired) / oracle.rows_per_unit if paired and not levels
                                       else None, rho)
        released = oracle.measure_many(list(zip(first, split_rho(one_way_share * rho, first_shares(first_cells))))) + paired
        total = estimate_total(released)  # every histogram of the first pass (levels, target pairs too) estimates N
        released, paired = released[: len(released) - len(pair_scopes)], released[len(released) - len(pair_scopes):]
        paired_with = {(scope[0] if scope[1] == target else scope[1]): (scope, m) for scope, m in zip(pair_scopes, paired)}
        counts = [pooled_counts(m, *paired_with[j], target) if j in paired_with else (np.asarray(m.values, dtype=np.float64), m.sigma)
                  for j, m in enumerate(released[: len(one_way)])]
        # post-processing of the 1-ways: ranges holding much of the data get finer, sparse codes merge
        swamped = swamped_columns(schema, counts, total, target, groupings)
        if o.refine_dense:
            groupings = [refine(g, values, total / o.numeric_groups) for g, (values, _) in zip(groupings, counts)]
        ranged = {j for j, ranges in swamped.items() if ranges is not None and ranges != groupings[j]}  # sized to the noise
        groupings = [swamped.get(j) or g for j, g in enumerate(groupings)]
        if o.compress_threshold > 0:
            groupings = [g if column.hierarchy or j == target or j in ranged else compress(g, values, sigma, o.compress_threshold)
                         for j, (column, g, (values, sigma)) in enumerate(zip(schema, groupings, counts))]
        if o.refine_dense or o.compress_threshold > 0 or swamped:
            prepared = {_shape_key(c) for c in candidates}  # never a candidate the scan skipped
            levels, candidates = _workload_candidates(schema, crosses, o.max_marginal_cells, groupings, weights)
            candidates = [c for c in candidates if _shape_key(c) in prepared]
        sizes = [c.size if g is None else max(g) + 1 for c, g in zip(schema, groupings)]
        absent = absent_nulls(schema, counts, groupings)
        axes = {id(c): _tensors(c.axes, device) for c in candidates}  # converted once, used every round
        observations = [_summed_observation((j,), m, groupings, device) for j, m in enumerate(released[: len(one_way)])]
        observations += [_observation(c, m, device) for c, m in zip(levels, released[len(one_way):])]
        observations += [_summed_observation(scope, m, groupings, device) for scope, m in zip(pair_scopes, paired)]
        refinements = {j: (groupings[j], shrunk_shares(values, sigma, swamped[j] or groupings[j], total) if j in swamped
                           else within_group_shares(values, sigma, groupings[j], ordered_codes(schema.columns[j])),
                           target_ratios(*paired_with[j], target, total, groupings[j]) if j in paired_with else None)
                       for j, (values, sigma) in enumerate(counts) if groupings[j] is not None}
        rounds = max(1, round(o.rounds_per_column * len(schema)))
        rho_round = oracle.rho_remaining / rounds
        tree = JunctionTree(sizes, [ob.scope for ob in observations])
        fitter = MirrorDescent(tree, total, device, dtype=getattr(torch, o.fit_precision))
        model = fitter.fit(observations, o.iterations)
        round_losses = [float(fitter.loss)]  # after the first pass's fit, then after each round's refit
        _log.info("fpt: first pass fitted (%d measurements), error %.2f sigma per measured cell (RMS); up to %d rounds follow",
                  len(observations), fitter.error_in_sigmas(), rounds)
        self.rounds_: list[Round] = []
        sized_for, added_cells, answer_cells = None, {}, {}
        pools = _CandidatePools(candidates, o.max_candidates)
        while oracle.rho_remaining > 1e-9 * rho and candidates:
            if oracle.rho_remaining < 2 * rho_round:
                rho_round = oracle.rho_remaining  # the last round spends what is left
            select_rho, measure_rho = split_rho(rho_round, [o.select_share, 1.0 - o.select_share])
            sigma = oracle.rows_per_unit / math.sqrt(2.0 * measure_rho)  # a count's noise (K rows per unit)
            scopes = list(dict.fromkeys(ob.scope for ob in observations))
            # the cap grows with the budget spent (as in AIM), up to max_model_cells: public, and not
            # growing with n, so past the rows where the noise stops limiting the model the fit's size is flat
            cap = min(o.max_model_cells, MODEL_CELLS_PER_BUDGET * max(1.0 - oracle.rho_remaining / rho, one_way_share))
            if sized_for != scopes:  # public sizes per candidate scope; they change only with the tree
                sized_for, added_cells, answer_cells = scopes, {}, {}
            pool = pools.next()  # all candidates, or a public random share of them on wide tables
            for s in dict.fromkeys(c.scope for c in pool):
                if s not in added_cells:
                    added_cells[s], answer_cells[s] = tree.largest_bag_if_added(s), tree.marginal_cells(s)
            # public decisions from domain sizes: the model stays within the cap, and the model's
            # answer to each candidate can be computed within it too
            allowed = [c for c in pool if added_cells[c.scope] <= cap and answer_cells[c.scope] <= max(o.max_model_cells, ANSWER_CELLS)]
            if not allowed:
                allowed = [c for c in pool if tree.bag_containing(c.scope) is not None] or list(pool)
            answers = [project(total * table.double(), axes[id(c)]).cpu().numpy()
                       for c, table in zip(allowed, model.marginals([c.scope for c in allowed]))]
            penalty = [c.weight * math.sqrt(2.0 / math.pi) * sigma * a.size for c, a in zip(allowed, answers)]
            chosen = oracle.select([c.query for c in allowed], "weighted_l1", answers, select_rho,
                                   weights=[c.weight for c in allowed], offsets=penalty)
            index = [c.query for c in allowed].index(chosen)
            candidate, before = allowed[index], answers[index]
            observations.append(_observation(candidate, oracle.measure(chosen, measure_rho), device))
            if candidate.scope not in scopes:
                tree = JunctionTree(sizes, scopes + [candidate.scope])
                fitter.tree = tree
            model = fitter.fit(observations, o.iterations)
            self.rounds_.append(Round(chosen.name, rho_round, tree.width))
            round_losses.append(float(fitter.loss))
            _log.info("fpt: round %d selected %s (rho %.3g), error %.2f sigma per measured cell (RMS)", len(self.rounds_),
                      chosen.name, rho_round, fitter.error_in_sigmas())
            after = project(total * model.marginal(candidate.scope).double(), axes[id(candidate)]).cpu().numpy()
            if o.anneal and np.abs(after - before).sum() <= math.sqrt(2.0 / math.pi) * sigma * after.size:
                rho_round *= 4.0  # σ halves: the model stopped learning at this noise level
        self.width_, self.largest_bag_ = tree.width, tree.largest_bag_cells
        summary = {"width": tree.width, "largest_bag_cells": tree.largest_bag_cells, "rounds": len(self.rounds_),
                   "selected": [r.selected for r in self.rounds_], "round_rho": [r.rho for r in self.rounds_],
                   "columns_without_nulls": [schema.names[j] for j in absent],
                   "columns_swamped": {schema.names[j]: sizes[j] for j in swamped}}
        return Measured(sizes, total, refinements, summary, observations=[ob.to("cpu") for ob in observations],
                        potentials=fitter.potentials(), step=fitter.step, target=target, round_losses=round_losses,
                        absent=absent)


    def _measure_lp(self, schema: Schema, oracle: MeasurementOracle) -> "Measured":
        """Measure the whole workload once (ρ split evenly) for the minimax LP (:mod:`.lp`)."""
        o = self.options
        groupings, measured, n_first = _lp_workload(schema, o)
        sizes = [c.size if g is None else max(g) + 1 for c, g in zip(schema, groupings)]
        n_cells = sum(int(np.prod(c.query.answer_shape(schema))) for c in measured)
        if n_cells > o.lp_max_cells:
            raise ParameterError("fpt.lp_max_cells", f"at least the workload's {n_cells} cells (LP mode is for small "
                                 "workloads: use mode=pmw, or fewer/smaller marginals)", o.lp_max_cells)
        released = oracle.measure_many(list(zip([c.query for c in measured], split_rho(oracle.rho_remaining, [1.0] * len(measured)))))
        total = estimate_total(released[:n_first])
        refinements = {j: (groupings[j], probabilities_from_counts(m.values, total))
                       for j, m in enumerate(released[: len(schema)]) if groupings[j] is not None}
        targets = [_lp_target(c, m, total, groupings[c.scope[0]]) for c, m in zip(measured, released)]
        return Measured(sizes, total, refinements, {"measured": [c.query.name for c in measured]}, lp_targets=targets)

    def _solve_lp(self, schema: Schema, measured: "Measured") -> FptModel:
        solution = lp.solve(measured.sizes, measured.lp_targets, self.options.lp_max_iterations)
        summary = {"mode": "lp", "lp_iterations": solution.iterations, "lp_converged": solution.converged,
                   "lp_max_error": solution.max_error, "support_points": len(solution.points), **measured.summary}
        return FptModel([c.size for c in schema], measured.sizes, {}, measured.total, measured.refinements,
                        support=solution.points, weights=solution.weights, summary=summary)


@dataclass
class Measured:
    """What FPT's final fit needs: the model's sizes, the DP row estimate, the refinements, public
    facts of the loop, and PMW's noisy observations and warm start — or the LP's targets."""

    sizes: list
    total: float
    refinements: dict
    summary: dict
    observations: list = field(default_factory=list)
    potentials: dict = field(default_factory=dict)
    step: float | None = None
    lp_targets: list | None = None
    target: int | None = None
    round_losses: list = field(default_factory=list)
    absent: dict = field(default_factory=dict)  # column → its null's model code, given no mass


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


def _marginal_workload(schema: Schema, o: FptConfig) -> tuple[list, list[str], list]:
    """Both modes' start: the columns' groupings (public: the model works on these groups), the
    checked hierarchy crosses and the workload's marginal scopes."""
    groupings = coarse_groupings(schema, o.numeric_groups)
    crosses = _checked_crosses(schema, o.hierarchy_crosses)
    return groupings, crosses, marginal_workload(schema, o.max_way, o.max_marginal_cells, groupings)


def _pmw_workload(schema: Schema, o: FptConfig) -> _Workload:
    groupings, crosses, workload = _marginal_workload(schema, o)
    cross_scopes = [tuple(sorted((h, schema.names.index(c)))) for h, col in enumerate(schema) if col.hierarchy
                    for c in crosses if c != col.name]
    weights = candidates_and_weights(workload + cross_scopes)
    weights = {c: w for c, w in weights.items() if cells(schema, c, groupings) <= o.max_marginal_cells}
    levels, candidates = _workload_candidates(schema, crosses, o.max_marginal_cells, groupings, weights)
    one_way = [MarginalQuery((name,)) for name in schema.names]
    target = _target_index(schema, groupings) if o.target_share > 0 else None
    pair_scopes = [] if target is None else [
        tuple(sorted((j, target))) for j in range(len(schema))
        if j != target and schema.columns[j].size * schema.columns[target].size <= o.max_marginal_cells]
    target_pairs = [MarginalQuery(tuple(schema.names[j] for j in scope)) for scope in pair_scopes]
    scan = (one_way + [c.query for c in levels] + target_pairs
            + [_at_full_resolution(c.query, schema, groupings) for c in candidates])
    return _Workload(groupings, crosses, weights, levels, candidates, one_way, target, pair_scopes, target_pairs, scan)


def _lp_workload(schema: Schema, o: FptConfig) -> tuple[list, list[Candidate], int]:
    """LP mode's groupings, the candidates it measures (1-ways, hierarchy levels, the workload's
    marginals, crossed levels) and how many lead the list as row-count estimates (1-ways and levels)."""
    groupings, crosses, workload = _marginal_workload(schema, o)
    levels, crossed = hierarchy_candidates(schema, crosses, o.max_marginal_cells, groupings, {})
    one_way = [Candidate((j,), MarginalQuery((name,)), (None,)) for j, name in enumerate(schema.names)]
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


def _one_way_share(o: FptConfig, first_cells: list[int], total: float | None, rho: float) -> float:
    """The ρ share of the 1-way pass: ``one_way_share`` when a number; None (`null`), with the target
    pairs' DP row estimate ``total`` (no hierarchy), the share whose cells^(2/3) split makes the
    histograms' expected L1 error, averaged over them, ``one_way_error`` of the rows — the pairs
    summed over the target re-release every column's counts, so a large table needs less — within
    [ONE_WAY_SHARE_MIN, ONE_WAY_SHARE]; else ONE_WAY_SHARE. Post-processing of DP releases and
    public sizes: with ρ_j ∝ c_j^(2/3), Σ_j c_j·σ_j·√(2/π) = (Σ_j c_j^(2/3))^(3/2)·√(1/(πρ₁))."""
    if o.one_way_share is not None:
        return float(o.one_way_share)
    if total is None:
        return ONE_WAY_SHARE
    weight = sum(float(c) ** (2.0 / 3.0) for c in first_cells)
    rho_one = weight**3 / (math.pi * (o.one_way_error * len(first_cells) * total) ** 2)
    return min(max(rho_one / rho, ONE_WAY_SHARE_MIN), ONE_WAY_SHARE)


def _lp_target(candidate: Candidate, measurement: NoisyMeasurement, total: float, grouping) -> Target:
    """A noisy answer as shares of the DP row estimate, over the model's codes (a 1-way histogram of a
    grouped numeric column summed into its groups)."""
    values = np.asarray(measurement.values, dtype=np.float64) / total
    if grouping is not None and len(candidate.scope) == 1 and candidate.axes == (None,):
        values = np.bincount(np.asarray(grouping), weights=values)
    return Target(candidate.scope, values, candidate.axes)


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


def _tensors(axes: tuple, device) -> tuple:
    """A candidate's per-axis groupings as index tensors (None stays None)."""
    return tuple(None if a is None else torch.as_tensor(a, dtype=torch.int64, device=device) for a in axes)


def _observation(candidate: Candidate, measurement: NoisyMeasurement, device) -> Observation:
    values = torch.as_tensor(np.asarray(measurement.values, dtype=np.float64), device=device)
    return Observation(tuple(candidate.scope), values, measurement.sigma, _tensors(candidate.axes, device))


def _summed_observation(scope: tuple, measurement: NoisyMeasurement, groupings, device) -> Observation:
    """A noisy table over the full codes of ``scope``'s columns, summed into the model's groups (each
    cell's noise: σ·√(codes summed into it))."""
    values = torch.as_tensor(np.asarray(measurement.values, dtype=np.float64), device=device)
    axes = _tensors(tuple(groupings[j] for j in scope), device)
    if all(a is None for a in axes):
        return Observation(tuple(scope), values, measurement.sigma)
    summed, members = project(values, axes), project(torch.ones_like(values), axes)
    return Observation(tuple(scope), summed, measurement.sigma * members.sqrt())


def _target_index(schema: Schema, groupings) -> int | None:
    """The schema's target column when the model keeps its codes (categorical or few ordered values)."""
    if schema.target is None or schema.target not in schema.names:
        return None
    t = schema.names.index(schema.target)
    return t if groupings[t] is None else None
