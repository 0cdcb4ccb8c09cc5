"""Fit a Gibbs distribution to noisy linear measurements of its marginals (post-processing only).

Each :class:`Observation` is a noisy answer y (σ known) to a linear map of the model's marginal
over a clique scope — counts N·p_c, optionally grouped along axes by public code → group maps
(hierarchy levels). We minimise Σ ‖A(N·p_c) − y‖² / σ² over the log-potentials θ by entropic
mirror descent: θ_c ← θ_c − α·∂L/∂μ_c (a multiplicative update of the distribution), with an
Armijo backtracking step, warm-started from the previous round's θ. Marginals come from exact
sum-product on the junction tree of the observed scopes.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import torch

from .graphical import GibbsModel, JunctionTree

#: Each step first tries the last accepted step size times this; Armijo backtracking halves it. At 2
#: nearly every step failed once (two sum-products a step); 1.25 needs a third fewer at the same
#: loss per step (benchmarks/RESULTS.md, "Where FPT's fit time goes").
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


class MirrorDescent:
    """Warm-started fitting of θ (one table per observed scope) on a fixed junction tree."""

    def __init__(self, tree: JunctionTree, total: float, device, potentials: dict | None = None):
        self.tree, self.total, self.device = tree, float(total), device
        self.theta = {s: t.to(device) for s, t in (potentials or {}).items()}
        self.step = None

    def _loss(self, theta: dict, observations: Sequence[Observation], weights: Sequence):
        """Σ ‖A(N·p) − y‖²/σ² at ``theta`` (``weights``: each observation's 1/σ²), its gradient
        in the counts per scope, the counts per scope and the calibrated model."""
        model = GibbsModel(self.tree, theta, self.device).calibrate()
        mu = {scope: self.total * model.marginal(scope) for scope in dict.fromkeys(o.scope for o in observations)}
        loss, gradient = [], {}
        for o, weight in zip(observations, weights):
            weighted = (o.project(mu[o.scope]) - o.values) * weight
            loss.append(torch.dot(weighted.reshape(-1), (weighted / weight).reshape(-1)) if isinstance(weight, float)
                        else (weighted * weighted / weight).sum())
            g = o.adjoint(2.0 * weighted)
            gradient[o.scope] = gradient[o.scope] + g if o.scope in gradient else g
        return float(torch.stack(loss).sum()), gradient, mu, model

    def fit(self, observations: Sequence[Observation], iterations: int) -> GibbsModel:
        """Run ``iterations`` mirror-descent steps; returns the calibrated model at the final θ.
        ``history`` holds the loss before the first step and after each step."""
        for o in observations:
            if o.scope not in self.theta:
                self.theta[o.scope] = torch.zeros(self.tree.shape(o.scope), dtype=torch.float64, device=self.device)
        weights = [1.0 / o.sigma**2 if isinstance(o.sigma, (int, float)) else 1.0 / o.sigma**2 for o in observations]
        loss, gradient, mu, model = self._loss(self.theta, observations, weights)
        if self.step is None:  # ~1 / smoothness of the loss in counts
            self.step = 1.0 / (2.0 * self.total * sum(float((1.0 / torch.as_tensor(o.sigma) ** 2).max()) for o in observations))
        self.history = [float(loss)]
        for _ in range(iterations):
            self.step *= STEP_GROWTH
            for _ in range(30):
                trial = {s: t - self.step * gradient[s] if s in gradient else t for s, t in self.theta.items()}
                new_loss, new_gradient, new_mu, new_model = self._loss(trial, observations, weights)
                decrease = float(torch.stack([torch.dot(gradient[s].reshape(-1), (mu[s] - new_mu[s]).reshape(-1))
                                              for s in gradient]).sum())
                if loss - new_loss >= 0.5 * self.step * decrease:
                    break
                self.step *= 0.5
            else:
                break  # no step decreases the loss: at a stationary point
            self.theta, loss, gradient, mu, model = trial, new_loss, new_gradient, new_mu, new_model
            self.history.append(float(loss))
        self.loss = loss
        return model

    def potentials(self) -> dict:
        return {s: t.detach().cpu() for s, t in self.theta.items()}
