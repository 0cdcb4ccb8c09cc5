"""FPT's LP mode: a sparse distribution h minimising the largest deviation from noisy answers.

    minimise t   subject to   |Σ_x h_x q_i(x) − a_i| ≤ t  (every workload cell i),   Σ h = 1,   h ≥ 0

over the whole (exponential) domain, by column generation: the restricted LP over the points found
so far is solved by SciPy's HiGHS; its duals turn every marginal's cells into a weight table, and
the max-sum dynamic programme over the workload's junction tree finds the domain point of largest
reduced-cost violation, which joins the LP. It stops when no point violates (the restricted
optimum is then the full-domain optimum) or after ``max_iterations``. Post-processing of the noisy
answers only; ``a_i`` are noisy counts divided by the DP row estimate (never the true count).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

import numpy as np
import torch
from scipy import optimize, sparse

from ...errors import InternalError
from .graphical import JunctionTree, max_sum

TOLERANCE = 1e-9


@dataclass(frozen=True)
class Target:
    """Noisy answers ``values`` (a table, as shares of the row total) to the marginal over ``scope``,
    axis k summed into groups by ``axes[k]`` (a public map of codes to groups, e.g. a hierarchy
    level) where given."""

    scope: tuple[int, ...]
    values: np.ndarray
    axes: tuple | None = None

    def cell(self, point: np.ndarray) -> int:
        """Flat index of the cell holding domain point ``point``."""
        coords = [int(point[v]) if a is None else int(a[point[v]]) for v, a in zip(self.scope, self.axes or (None,) * len(self.scope))]
        return int(np.ravel_multi_index(tuple(coords), self.values.shape))

    def spread(self, table: torch.Tensor) -> torch.Tensor:
        """A table over the cells as a table over the scope's codes (each code takes its group's value)."""
        for k, a in enumerate(self.axes or ()):
            if a is not None:
                table = table.index_select(k, torch.as_tensor(a, dtype=torch.int64))
        return table


@dataclass
class LpSolution:
    points: np.ndarray  # (k, d) domain points with positive weight
    weights: np.ndarray  # their probabilities
    max_error: float  # the optimum t (largest deviation, in shares)
    iterations: int
    converged: bool


def solve(sizes: Sequence[int], targets: Sequence[Target], max_iterations: int, start: np.ndarray | None = None) -> LpSolution:
    """Column generation for the minimax-deviation LP (see the module docstring)."""
    tree = JunctionTree(sizes, [t.scope for t in targets])
    offsets = np.cumsum([0] + [t.values.size for t in targets])
    answers = np.concatenate([t.values.ravel() for t in targets])
    points = [np.asarray(p, dtype=np.int64) for p in (start if start is not None else [_best_single(tree, targets)])]
    seen = {tuple(p) for p in points}
    converged, iterations = False, 0
    for iterations in range(1, max_iterations + 1):
        result = _restricted(points, targets, offsets, answers)
        # HiGHS's marginals y are the multipliers with reduced costs c − Aᵀy; a new point x has
        # c_x = 0, so its reduced cost is −(Σ_i (y⁺_i − y⁻_i) q_i(x) + y_eq): max-sum finds the most negative
        multipliers = result.ineqlin.marginals[: len(answers)] - result.ineqlin.marginals[len(answers):]
        tables: dict = {}
        for k, t in enumerate(targets):
            table = t.spread(torch.as_tensor(multipliers[offsets[k]:offsets[k + 1]].reshape(t.values.shape)))
            tables[t.scope] = tables[t.scope] + table if t.scope in tables else table
        value, best = max_sum(tree, tables)
        if value + result.eqlin.marginals[0] <= TOLERANCE or tuple(best) in seen:
            converged = True
            break
        points.append(np.asarray(best, dtype=np.int64))
        seen.add(tuple(best))
    result = _restricted(points, targets, offsets, answers)
    weights = np.maximum(result.x[:-1], 0.0)
    keep = weights > TOLERANCE
    return LpSolution(np.array(points)[keep], weights[keep] / weights[keep].sum(), float(result.x[-1]), iterations, converged)


def _restricted(points, targets, offsets, answers):
    """HiGHS on the LP restricted to ``points`` (variables h_1..h_k, t)."""
    k, m = len(points), len(answers)
    rows, cols = [], []
    for j, x in enumerate(points):
        for i, t in enumerate(targets):
            rows.append(offsets[i] + t.cell(x))
            cols.append(j)
    a = sparse.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=(m, k))
    minus_t = sparse.csr_matrix(-np.ones((m, 1)))
    a_ub = sparse.vstack([sparse.hstack([a, minus_t]), sparse.hstack([-a, minus_t])]).tocsr()
    b_ub = np.concatenate([answers, -answers])
    a_eq = sparse.csr_matrix(np.concatenate([np.ones(k), [0.0]])[None, :])
    cost = np.zeros(k + 1)
    cost[-1] = 1.0
    result = optimize.linprog(cost, A_ub=a_ub, b_ub=b_ub, A_eq=a_eq, b_eq=[1.0], bounds=(0, None), method="highs")
    if result.status != 0:
        raise InternalError(f"the LP solver failed: {result.message}")
    return result


def _best_single(tree: JunctionTree, targets: Sequence[Target]) -> np.ndarray:
    """A first point: the mode of the answers (max-sum of the answer tables themselves)."""
    tables: dict = {}
    for t in targets:
        table = t.spread(torch.as_tensor(t.values, dtype=torch.float64))
        tables[t.scope] = tables[t.scope] + table if t.scope in tables else table
    _, best = max_sum(tree, tables)
    return np.asarray(best, dtype=np.int64)
