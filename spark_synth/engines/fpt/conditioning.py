"""An FPT model conditioned on evidence: the same Gibbs distribution times the evidence's weights.

p(x | evidence) ∝ exp(Σ_b θ_b(x_b)) · Π_j w_j(x_j) is again a Gibbs distribution: each column's weights
become one more log-potential, so the conditioned model is sampled by the same exact tree sampler
(sum-product with evidence), and its log-partition minus the model's is the evidence's log-probability.

A coarsened column (sampled as a group, then refined to a fine code within it) takes its weights in two
places: the group's potential is the group's expected weight under the refinement, Σ_c q(c | group)·w(c)
— a potential over (column, target) when the refinement depends on the row's target value — and the
refinement then draws ∝ q(c | group)·w(c). An LP model (a sparse histogram) reweights its rows by the
same factors. Post-processing of the fitted model; NumPy only (runs on Spark workers).
"""

from __future__ import annotations

import numpy as np

from ...errors import InternalError
from ..evidence import Evidence, log_weights


def evidence_factors(model, evidence: Evidence) -> tuple[list[tuple[tuple[int, ...], np.ndarray]], dict]:
    """(the evidence as factors over the model codes — (scope, table) pairs —, refinements drawing within
    the evidence) of an FPT model (its ``sizes``, ``refinements`` and ``target``)."""
    factors, refinements = [], dict(model.refinements)
    for j in evidence.columns:
        w = evidence.get(j)
        if j not in model.refinements:
            factors.append(((j,), w))
            continue
        grouping, fine, by_target = model.refinements[j]
        if by_target is None or model.target is None:
            q = _within_groups(grouping, fine[:, None])[:, 0]
            factors.append(((j,), _group_sums(grouping, (q * w)[:, None], model.sizes[j])[:, 0]))
            refinements[j] = (grouping, q * w, None)
            continue
        if by_target.shape[1] != model.sizes[model.target]:
            raise InternalError("an fpt refinement by target must follow the target's model codes")
        q = _within_groups(grouping, fine[:, None] * by_target, fallback=fine)
        factors.append(((j, model.target), _group_sums(grouping, q * w[:, None], model.sizes[j])))
        refinements[j] = (grouping, np.ones(len(fine)), q * w[:, None])
    return factors, refinements


def with_log_factors(potentials: dict, factors) -> dict:
    """Copies of the log-potential tables with each factor's log added (a new scope where there is none)."""
    out = {scope: table.copy() for scope, table in potentials.items()}
    for scope, factor in factors:
        log_factor = log_weights(factor)
        if scope[0] > scope[-1]:  # (column, target) with the target first: axes in sorted order
            scope, log_factor = scope[::-1], log_factor.T
        out[scope] = out[scope] + log_factor if scope in out else log_factor
    return out


def row_factor(support: np.ndarray, factors) -> np.ndarray:
    """Per row of a sparse histogram's support (model codes): the product of the factors."""
    out = np.ones(len(support))
    for scope, factor in factors:
        out = out * factor[tuple(support[:, v] for v in scope)]
    return out


def _within_groups(grouping: np.ndarray, weights: np.ndarray, fallback: np.ndarray | None = None) -> np.ndarray:
    """Each column of ``weights`` (codes × k) normalised within every group of codes: the refinement's
    q(code | group[, t]) — ∝ ``fallback`` where a group's weights have no mass, uniform where neither
    has (as the sampler's refinement draws)."""
    out = np.zeros_like(weights, dtype=np.float64)
    for group in np.unique(grouping):
        members = grouping == group
        for t in range(weights.shape[1]):
            mass = weights[members, t]
            if not mass.sum() > 0 and fallback is not None:
                mass = fallback[members]
            if not mass.sum() > 0:
                mass = np.ones(int(members.sum()))
            out[members, t] = mass / mass.sum()
    return out


def _group_sums(grouping: np.ndarray, values: np.ndarray, n_groups: int) -> np.ndarray:
    """(groups × k) sums of ``values`` (codes × k) over each group's codes."""
    out = np.zeros((n_groups, values.shape[1]))
    np.add.at(out, grouping, values)
    return out

