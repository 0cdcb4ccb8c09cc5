"""FPT engine: private multiplicative weights over a tree decomposition (default), or an LP.

PMW mode (``mode="pmw"``), an adaptive select–measure–refit loop on the measurement oracle:

SELECT   all 1-way histograms (share ``one_way_share`` of ρ); then each round privately picks the
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
from dataclasses import dataclass

import numpy as np
import torch

from ...privacy import NoisyMeasurement, split_rho
from ...queries import MarginalQuery
from ...schema import Schema
from ..base import Engine, MeasurementOracle, TaskRunner
from ..postprocess import estimate_total, probabilities_from_counts
from .config import FptConfig
from .estimation import MirrorDescent, Observation
from .graphical import JunctionTree
from .model import FptModel
from .workload import candidates_and_weights, coarse_groupings, marginal_workload


@dataclass
class Round:
    """What one round did (public: names and budgets only)."""

    selected: str
    rho: float
    width: int


class FptEngine(Engine):
    """Treewidth-bounded private synthetic data for counting-query workloads."""

    name = "fpt"
    model_class = FptModel
    config_class = FptConfig

    def fit(self, schema: Schema, oracle: MeasurementOracle, tasks: TaskRunner) -> FptModel:
        threads = torch.get_num_threads()
        torch.set_num_threads(self.options.cpu_threads)
        try:
            return self._fit_pmw(schema, oracle)
        finally:
            torch.set_num_threads(threads)

    def _device(self):
        choice = self.options.device
        return torch.device("cuda" if choice == "cuda" or (choice == "auto" and torch.cuda.is_available()) else "cpu")

    def _fit_pmw(self, schema: Schema, oracle: MeasurementOracle) -> FptModel:
        o, device = self.options, self._device()
        rho = oracle.rho_remaining
        groupings = coarse_groupings(schema, o.numeric_groups)  # public: the model works on these groups
        sizes = [c.size if g is None else max(g) + 1 for c, g in zip(schema, groupings)]
        workload = marginal_workload(schema, o.max_way, o.max_marginal_cells, groupings)
        weights = candidates_and_weights(workload)
        query = {c: MarginalQuery(tuple(schema.names[j] for j in c), groupings=tuple(groupings[j] for j in c)) for c in weights}
        one_way = [MarginalQuery((name,)) for name in schema.names]
        oracle.prepare(one_way + list(query.values()))  # every exact answer in one scan

        released = oracle.measure_many(list(zip(one_way, split_rho(o.one_way_share * rho, [1.0] * len(one_way)))))
        total = estimate_total(released)
        observations = [_one_way_observation(j, m, groupings[j], device) for j, m in enumerate(released)]
        refinements = {j: (groupings[j], probabilities_from_counts(m.values, total))
                       for j, m in enumerate(released) if groupings[j] is not None}
        rounds = max(1, round(o.rounds_per_column * len(schema)))
        rho_round = oracle.rho_remaining / rounds
        tree = JunctionTree(sizes, [ob.scope for ob in observations])
        fitter = MirrorDescent(tree, total, device)
        model = fitter.fit(observations, o.iterations)
        self.rounds_: list[Round] = []
        while oracle.rho_remaining > 1e-9 * rho and weights:
            if oracle.rho_remaining < 2 * rho_round:
                rho_round = oracle.rho_remaining  # the last round spends what is left
            select_rho, measure_rho = split_rho(rho_round, [o.select_share, 1.0 - o.select_share])
            sigma = 1.0 / math.sqrt(2.0 * measure_rho)
            scopes = list(dict.fromkeys(ob.scope for ob in observations))
            cap = o.max_model_cells * max(1.0 - oracle.rho_remaining / rho, o.one_way_share)
            allowed = [c for c in weights if JunctionTree.bag_cells_if_added(sizes, scopes, c) <= cap]
            if not allowed:
                allowed = [c for c in weights if tree.bag_containing(c) is not None] or list(weights)
            answers = [total * model.marginal(c).cpu().numpy() for c in allowed]
            w = [weights[c] for c in allowed]
            penalty = [wc * math.sqrt(2.0 / math.pi) * sigma * a.size for wc, a in zip(w, answers)]
            chosen = oracle.select([query[c] for c in allowed], "weighted_l1", answers, select_rho, weights=w, offsets=penalty)
            clique = next(c for c in allowed if query[c] == chosen)
            before = answers[allowed.index(clique)]
            observations.append(_observation(clique, oracle.measure(chosen, measure_rho), device))
            if clique not in scopes:
                tree = JunctionTree(sizes, scopes + [clique])
                fitter.tree = tree
            model = fitter.fit(observations, o.iterations)
            self.rounds_.append(Round(chosen.name, rho_round, tree.width))
            after = total * model.marginal(clique).cpu().numpy()
            if o.anneal and np.abs(after - before).sum() <= math.sqrt(2.0 / math.pi) * sigma * after.size:
                rho_round *= 4.0  # σ halves: the model stopped learning at this noise level
        fitter.fit(observations, o.final_iterations)
        self.width_, self.largest_bag_ = tree.width, tree.largest_bag_cells
        return FptModel([c.size for c in schema], sizes, fitter.potentials(), total, refinements)


def _observation(scope, measurement: NoisyMeasurement, device) -> Observation:
    values = torch.as_tensor(np.asarray(measurement.values, dtype=np.float64), device=device)
    return Observation(tuple(scope), values, measurement.sigma)


def _one_way_observation(j: int, measurement: NoisyMeasurement, grouping, device) -> Observation:
    """A column's noisy histogram, summed into the model's groups (each group's noise: σ·√cells)."""
    values = torch.as_tensor(np.asarray(measurement.values, dtype=np.float64), device=device)
    if grouping is None:
        return Observation((j,), values, measurement.sigma)
    groups = torch.as_tensor(grouping, dtype=torch.int64, device=device)
    summed = torch.zeros(int(groups.max()) + 1, dtype=torch.float64, device=device).index_add_(0, groups, values)
    cells = torch.bincount(groups).to(torch.float64)
    return Observation((j,), summed, measurement.sigma * cells.sqrt())
