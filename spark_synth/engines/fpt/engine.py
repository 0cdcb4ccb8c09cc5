"""FPT engine: private multiplicative weights over a tree decomposition (default), or an LP.

PMW mode (``mode="pmw"``), an adaptive select–measure–refit loop on the measurement oracle:

SELECT   all 1-way histograms (share ``one_way_share`` of ρ) and, when the schema names a
         target, every column's 2-way table with the target (a regression target in its public
         ranges) at full resolution (``target_share``: they let sampled ranges and merged codes be
         refined given the target, as a model trained on the output needs; only those whose
         table shows the target's dependence above its noise enter the fit); then each round privately picks the
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
from ...privacy import split_rho
from ...schema import Schema
from ..base import Engine, MeasurementOracle
from ..groupings import cells, ordered_codes
from ..postprocess import estimate_total, probabilities_from_counts
from ..torch_threads import fit_device, torch_threads
from .code_shares import (absent_nulls, pooled_counts, shrunk_shares, swamped_columns, target_ratios, without_noise_null,
                          within_group_shares, without)
from .compression import compress, refine
from .config import ONE_WAY_SHARE, ONE_WAY_SHARE_MIN, FptConfig
from .estimation import MirrorDescent, project
from . import lp
from .graphical import JunctionTree
from .model import FptLpModel, FptModel
from .observations import _lp_target, _observation, _summed_observation, _tensors
from .target_signal import carries_signal, every_triple_wanted, strongest_columns
from .workload import first_shares
from .workload_plan import _CandidatePools  # noqa: F401 (re-exported)
from .workload_plan import (_lp_workload, _pmw_workload, _shape_key, _workload_candidates, target_pair_weights, triples_among,
                            workload_weights)

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
        return fit_device(self.options.device)

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
                o.target_share * rho, target_pair_weights(schema, pair_scopes, groupings, target, o.target_split)))))
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
        if o.refine_dense:  # a regression target keeps the ranges its pairs were measured in
            groupings = [g if j == target else refine(g, values, total / o.numeric_groups)
                         for j, (g, (values, _)) in enumerate(zip(groupings, counts))]
        ranged = {j for j, ranges in swamped.items() if ranges is not None and ranges != groupings[j]}  # sized to the noise
        groupings = [swamped.get(j) or g for j, g in enumerate(groupings)]
        if o.compress_threshold > 0:
            groupings = [g if column.hierarchy or j == target or j in ranged else compress(g, values, sigma, o.compress_threshold)
                         for j, (column, g, (values, sigma)) in enumerate(zip(schema, groupings, counts))]
        sizes = [c.size if g is None else max(g) + 1 for c, g in zip(schema, groupings)]
        absent = absent_nulls(schema, counts, groupings)
        in_pairs = [None if j == target else g for j, g in enumerate(groupings)]  # a pair's target axis is in its groups already
        pairs = [_summed_observation(scope, m, in_pairs, device) for scope, m in zip(pair_scopes, paired)]
        kept = [carries_signal(ob.values.cpu().numpy(), ob.sigma.cpu().numpy() if torch.is_tensor(ob.sigma) else ob.sigma,
                               scope.index(target), o.target_pair_level, power_rule=groupings[target] is None)
                for scope, ob in zip(pair_scopes, pairs)]
        left_out = sorted(j for scope, keep in zip(pair_scopes, kept) if not keep for j in scope if j != target)
        triple_columns, ranks_triples = None, bool(o.target_triple_columns and w.triple_scopes)
        if ranks_triples and paired and not every_triple_wanted(kept, o.every_triple_at_noise_share):
            # only the triples of the columns the pairs rank first
            triple_columns = strongest_columns([(s, m.values, m.sigma) for s, m in zip(pair_scopes, paired)], target,
                                               o.target_triple_columns)
            weights = workload_weights(schema, w.base_scopes + triples_among(w.triple_scopes, set(triple_columns), target),
                                       o.max_marginal_cells, w.groupings)
        if ranks_triples:
            _log.info("fpt: %d of %d target pairs left out as noise; target triples: %s", len(left_out), len(pair_scopes),
                      "every one" if triple_columns is None else "those of " + ", ".join(schema.names[j] for j in triple_columns))
        if o.refine_dense or o.compress_threshold > 0 or swamped or triple_columns is not None:
            prepared = {_shape_key(c) for c in candidates}  # never a candidate the scan skipped
            levels, candidates = _workload_candidates(schema, crosses, o.max_marginal_cells, groupings, weights)
            candidates = [c for c in candidates if _shape_key(c) in prepared]
        axes = {id(c): _tensors(c.axes, device) for c in candidates}  # converted once, used every round
        observations = [_summed_observation((j,), m, groupings, device) for j, m in enumerate(released[: len(one_way)])]
        observations += [_observation(c, m, device) for c, m in zip(levels, released[len(one_way):])]
        observations += [ob for ob, keep in zip(pairs, kept) if keep]  # a pair that is mostly noise stays out of the model
        refinements = {j: (groupings[j], without_noise_null(
                               shrunk_shares(values, sigma, swamped[j] or groupings[j], total) if j in swamped
                               else within_group_shares(values, sigma, groupings[j], ordered_codes(schema.columns[j])),
                               groupings[j], schema.columns[j].null_code, values, sigma),
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
                   "columns_swamped": {schema.names[j]: sizes[j] for j in swamped},
                   "target_pairs_left_out": [schema.names[j] for j in left_out],
                   **({} if triple_columns is None else {"target_triple_columns": [schema.names[j] for j in triple_columns]}),
                   **({"every_target_triple": triple_columns is None} if ranks_triples else {})}
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

    def _solve_lp(self, schema: Schema, measured: "Measured") -> FptLpModel:
        solution = lp.solve(measured.sizes, measured.lp_targets, self.options.lp_max_iterations)
        summary = {"mode": "lp", "lp_iterations": solution.iterations, "lp_converged": solution.converged,
                   "lp_max_error": solution.max_error, "support_points": len(solution.points), **measured.summary}
        return FptLpModel([c.size for c in schema], measured.sizes, solution.points, solution.weights, measured.total,
                          measured.refinements, summary=summary)


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
