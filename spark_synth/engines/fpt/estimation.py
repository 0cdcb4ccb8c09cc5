"""Fit a Gibbs distribution to noisy linear measurements of its marginals (post-processing only).

Each :class:`Observation` is a noisy answer y (σ known) to a linear map of the model's marginal
over a clique scope — counts N·p_c, optionally grouped along axes by public code → group maps
(hierarchy levels). We minimise Σ ‖A(N·p_c) − y‖² / σ² over the log-potentials θ by entropic
mirror descent: θ_c ← θ_c − α·∂L/∂μ_c (a multiplicative update of the distribution), with an
Armijo backtracking step, warm-started from the previous round's θ. Marginals come from exact
sum-product on the junction tree of the observed scopes.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field
from typing import Sequence

import torch

from .graphical import GibbsModel, JunctionTree, Scope

#: Each step first tries the last accepted step size times this; Armijo backtracking halves it. At 2
#: nearly every step failed once (two sum-products a step); 1.25 needs a third fewer at the same
#: loss per step (benchmarks/results/2026-12-04.md, "FPT's step growth 1.25" and, on where the fit's
#: time goes, "FPT on small tables").
STEP_GROWTH = 1.25


def project(counts: torch.Tensor, groupings: Sequence) -> torch.Tensor:
    """Sum codes into their groups along each axis k with a group-index tensor ``groupings[k]`` (None: kept)."""
    for axis, groups in enumerate(groupings):
        if groups is None:
            continue
        shape = list(counts.shape)
        shape[axis] = int(groups.max()) + 1
        counts = torch.zeros(shape, dtype=counts.dtype, device=counts.device).index_add_(axis, groups, counts)
    return counts


@dataclass(frozen=True, eq=False)
class Observation:
    """y ≈ A(N·p_scope) + noise(σ): ``groupings[k]`` maps axis k's codes to groups (None: identity);
    ``sigma`` is a number or a table of per-cell noise scales."""

    scope: tuple[int, ...]
    values: torch.Tensor
    sigma: float | torch.Tensor
    groupings: tuple = field(default=())

    def project(self, counts: torch.Tensor) -> torch.Tensor:
        """A·counts: sum codes into their groups along each grouped axis."""
        return project(counts, self.groupings)

    def to(self, device) -> "Observation":
        """The same observation with its tensors on ``device``."""
        def moved(t):
            return t.to(device) if isinstance(t, torch.Tensor) else t

        return Observation(self.scope, moved(self.values), moved(self.sigma), tuple(moved(g) for g in self.groupings))

    def adjoint(self, residual: torch.Tensor) -> torch.Tensor:
        """Aᵀ·residual: spread each group's value back to its codes."""
        for axis, groups in enumerate(self.groupings):
            if groups is not None:
                residual = residual.index_select(axis, groups)
        return residual


class _BagSums:
    """Several scopes' marginals of one bag's table by one-axis sums along a shared plan (and back).

    From the bag, repeatedly sum out the variable that the most of the scopes still to serve lack: the
    scopes lacking it continue from that smaller table, the others branch off with another variable.
    All 2-way tables of a bag then cost a few passes over the bag, not one pass each.
    """

    def __init__(self, bag: Scope, sizes: Sequence[int], scopes: Sequence[Scope]):
        self.shapes: list[tuple[int, ...]] = []
        self.ops: list[tuple[int, int, int]] = []  # (parent node, axis summed out, child node), parents first
        self.node_of: dict[Scope, int] = {}
        self._plan(self._node(bag, sizes), bag, list(scopes), sizes)
        self.scopes = list(scopes)

    def _node(self, variables: Scope, sizes) -> int:
        self.shapes.append(tuple(sizes[v] for v in variables))
        return len(self.shapes) - 1

    def _plan(self, node: int, variables: Scope, scopes: list, sizes) -> None:
        remaining = []
        for scope in scopes:
            if scope == variables:
                self.node_of[scope] = node
            else:
                remaining.append(scope)
        while remaining:
            v = max(variables, key=lambda u: (sum(u not in scope for scope in remaining), sizes[u], -u))
            child = tuple(u for u in variables if u != v)
            index = self._node(child, sizes)
            self.ops.append((node, variables.index(v), index))
            self._plan(index, child, [scope for scope in remaining if v not in scope], sizes)
            remaining = [scope for scope in remaining if v in scope]

    def marginals(self, table: torch.Tensor) -> list[torch.Tensor]:
        """The scopes' tables (in ``scopes`` order) summed from the bag's ``table``."""
        tables = [table] + [None] * len(self.ops)
        for parent, axis, child in self.ops:
            tables[child] = tables[parent].sum(dim=axis)
        return [tables[self.node_of[scope]] for scope in self.scopes]

    def adjoint(self, scope_tables: Sequence[torch.Tensor]) -> torch.Tensor:
        """Σ of the scopes' tables broadcast along the bag's axes (a table broadcastable to the bag)."""
        sums: dict[int, torch.Tensor] = {}
        for scope, table in zip(self.scopes, scope_tables):
            node = self.node_of[scope]
            sums[node] = sums[node] + table if node in sums else table
        for parent, axis, child in reversed(self.ops):
            if child in sums:
                spread = sums.pop(child).unsqueeze(axis)
                sums[parent] = sums[parent] + spread if parent in sums else spread
        return sums[0]


class _Layout:
    """The observations of one fit laid end to end (built once per :meth:`MirrorDescent.fit`).

    The model's marginal over each distinct observed scope is one segment of a vector (the scopes of
    each bag summed from its belief by :class:`_BagSums`); every observation's cells are one segment of
    the answer vector. ``answer_cell[k]`` / ``marginal_cell[k]`` pair each (observation, scope cell)
    with the answer cell it is summed into, so A(N·p) for every observation is one weighted bincount,
    and the gradient back in the scopes' cells is another.
    """

    def __init__(self, tree: JunctionTree, observations: Sequence[Observation], device):
        by_bag: dict[int, list] = {}
        for scope in dict.fromkeys(o.scope for o in observations):
            by_bag.setdefault(tree.place(scope)[0], []).append(scope)
        self.bag_sums = {bag: _BagSums(tree.bags[bag], tree.sizes, scopes) for bag, scopes in by_bag.items()}
        self.scopes = [scope for scopes in by_bag.values() for scope in scopes]
        self.shapes = [tree.shape(scope) for scope in self.scopes]
        offsets = dict(zip(self.scopes, itertools.accumulate((math.prod(s) for s in self.shapes), initial=0)))
        self.offsets = [offsets[s] for s in self.scopes]
        self.marginal_cells = sum(math.prod(s) for s in self.shapes)
        answer_cell, marginal_cell, values, weights, start = [], [], [], [], 0
        for o in observations:
            shape = tree.shape(o.scope)
            grouped = tuple(o.values.shape)  # the answer's shape: the scope's, codes summed into groups
            index = torch.zeros(shape, dtype=torch.int64, device=device)
            stride = 1
            for axis in reversed(range(len(shape))):  # each scope cell's row-major index in the grouped table
                groups = o.groupings[axis] if axis < len(o.groupings) else None
                codes = torch.arange(shape[axis], device=device) if groups is None else groups.to(device)
                view = [1] * len(shape)
                view[axis] = shape[axis]
                index = index + codes.reshape(view) * stride
                stride *= grouped[axis]
            answer_cell.append(index.reshape(-1) + start)
            marginal_cell.append(torch.arange(math.prod(shape), device=device) + offsets[o.scope])
            values.append(o.values.reshape(-1).to(device))
            sigma = torch.as_tensor(o.sigma, dtype=torch.float64, device=device)
            weights.append((1.0 / sigma**2).expand(grouped).reshape(-1))
            start += math.prod(grouped)
        self.answer_cell, self.marginal_cell = torch.cat(answer_cell), torch.cat(marginal_cell)
        self.values, self.weights, self.answer_cells = torch.cat(values), torch.cat(weights), start

    def marginals(self, model: GibbsModel) -> torch.Tensor:
        """Every observed scope's probability table, laid end to end."""
        return torch.cat([table.reshape(-1) for bag, sums in self.bag_sums.items()
                          for table in sums.marginals(model.belief(bag))])

    def loss(self, counts: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Σ ‖A·counts − y‖²/σ² over the observations (``counts``: N·marginals, laid end to end), and its
        gradient in the same layout."""
        answers = torch.bincount(self.answer_cell, weights=counts[self.marginal_cell], minlength=self.answer_cells)
        weighted = (answers - self.values) * self.weights
        loss = torch.dot(weighted, answers - self.values)
        gradient = torch.bincount(self.marginal_cell, weights=(2.0 * weighted)[self.answer_cell], minlength=self.marginal_cells)
        return loss, gradient

    def segment(self, vector: torch.Tensor, k: int) -> torch.Tensor:
        """Scope k's table (its shape) from a vector laid out like :meth:`marginals`."""
        return vector[self.offsets[k]: self.offsets[k] + math.prod(self.shapes[k])].reshape(self.shapes[k])

    def to_bags(self, vector: torch.Tensor) -> dict[int, torch.Tensor]:
        """Each home bag's sum of its scopes' tables from ``vector`` (broadcastable along the bag's axes)."""
        tables, k = {}, 0
        for bag, sums in self.bag_sums.items():
            tables[bag] = sums.adjoint([self.segment(vector, k + j) for j in range(len(sums.scopes))])
            k += len(sums.scopes)
        return tables


class MirrorDescent:
    """Warm-started fitting of θ (one table per observed scope) on a fixed junction tree.

    Within one :meth:`fit` the log-potentials are kept per bag (θ_bag = Σ of its scopes' tables), so a
    step costs a calibration and a handful of whole-vector operations, not a few per observation; the
    per-scope tables (for warm starts on another tree, and the released model) are rebuilt at the end
    from the accumulated steps, which are linear in the gradient.
    """

    def __init__(self, tree: JunctionTree, total: float, device, potentials: dict | None = None,
                 dtype: torch.dtype = torch.float64):
        self.tree, self.total, self.device, self.dtype = tree, float(total), device, dtype
        self.theta = {s: t.to(device) for s, t in (potentials or {}).items()}
        self.step = None

    def _evaluate(self, bag_theta: list, layout: _Layout):
        """Loss, its gradient in the counts (laid out like ``layout``), the counts and the calibrated model."""
        tables = bag_theta if self.dtype == torch.float64 else [t.to(self.dtype) for t in bag_theta]
        model = GibbsModel.from_log_potentials(self.tree, tables, self.device).calibrate()
        counts = self.total * layout.marginals(model).to(torch.float64)
        loss, gradient = layout.loss(counts)
        return float(loss), gradient, counts, model

    def fit(self, observations: Sequence[Observation], iterations: int) -> GibbsModel:
        """Run ``iterations`` mirror-descent steps; returns the calibrated model at the final θ.
        ``history`` holds the loss before the first step and after each step."""
        for o in observations:
            if o.scope not in self.theta:
                self.theta[o.scope] = torch.zeros(self.tree.shape(o.scope), dtype=torch.float64, device=self.device)
        layout = _Layout(self.tree, observations, self.device)
        bag_theta = GibbsModel(self.tree, self.theta, self.device).log_potentials
        loss, gradient, counts, model = self._evaluate(bag_theta, layout)
        if self.step is None:  # ~1 / smoothness of the loss in counts
            self.step = 1.0 / (2.0 * self.total * sum(float((1.0 / torch.as_tensor(o.sigma) ** 2).max()) for o in observations))
        self.history = [float(loss)]
        moved = torch.zeros_like(gradient)  # Σ step · gradient over the accepted steps
        for _ in range(iterations):
            self.step *= STEP_GROWTH
            direction = layout.to_bags(gradient)
            for _ in range(30):
                trial = [t - self.step * direction[i] if i in direction else t for i, t in enumerate(bag_theta)]
                new_loss, new_gradient, new_counts, new_model = self._evaluate(trial, layout)
                decrease = float(torch.dot(gradient, counts - new_counts))
                if loss - new_loss >= 0.5 * self.step * decrease:
                    break
                self.step *= 0.5
            else:
                break  # no step decreases the loss: at a stationary point
            moved += self.step * gradient
            bag_theta, loss, gradient, counts, model = trial, new_loss, new_gradient, new_counts, new_model
            self.history.append(float(loss))
        for k, scope in enumerate(layout.scopes):
            self.theta[scope] = self.theta[scope] - layout.segment(moved, k)
        self.loss, self.answer_cells = loss, layout.answer_cells
        return model

    def error_in_sigmas(self) -> float:
        """The fit's root-mean-square error per measured cell, in units of that cell's noise σ: about 1
        when the model agrees with the measurements as well as their noise allows (the loss itself
        grows with every measurement added, so it cannot be compared across rounds)."""
        return math.sqrt(self.loss / max(1, self.answer_cells))

    def potentials(self) -> dict:
        return {s: t.detach().cpu() for s, t in self.theta.items()}
