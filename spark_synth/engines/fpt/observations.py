"""FPT's noisy measurements as its fits read them: PMW's observations (tables summed into the
model's groups, with each cell's noise) and the LP's targets (shares of the DP row estimate)."""

from __future__ import annotations

import numpy as np
import torch

from ...privacy import NoisyMeasurement
from .estimation import Observation, project
from .lp import Target
from .workload import Candidate


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


def _lp_target(candidate: Candidate, measurement: NoisyMeasurement, total: float, grouping) -> Target:
    """A noisy answer as shares of the DP row estimate, over the model's codes (a 1-way histogram of a
    grouped numeric column summed into its groups)."""
    values = np.asarray(measurement.values, dtype=np.float64) / total
    if grouping is not None and len(candidate.scope) == 1 and candidate.axes == (None,):
        values = np.bincount(np.asarray(grouping), weights=values)
    return Target(candidate.scope, values, candidate.axes)
