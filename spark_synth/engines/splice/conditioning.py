"""A SPLICE model conditioned on evidence: components reweighted by their posterior, rows drawn inside.

p(x | evidence) = Σ_k π_k P_k(evidence) / P(evidence) · p_k(x | evidence): component k is drawn with
weight π_k · P_k(evidence), and within it

* a code-modelled column draws ∝ p_kj(c) · w_j(c) (P_k is the product of Σ_c p_kj(c) w_j(c));
* the Gaussian block (``numeric_model="gaussian"``) turns latent values into codes through the model's
  own marginal CDF F (u = F(g), then the DP calibration's quantile; the unconditioned sampler uses the
  batch's ranks, which tend to F): code c is the latent interval [F⁻¹(C_{c}), F⁻¹(C_{c+1})). The
  constrained block column e with the smallest probability has P_k = s·w_null + (1 − s)·Σ_c w_c ·
  P_k(g_e ∈ interval c) (s: its null share); a row draws its code ∝ w_c · P_k(interval c), g_e from
  the component's normal truncated to that interval, and the other block columns from the component's
  Gaussian given g_e (Matheron's rule: a free draw corrected by Σ_{·e}/Σ_ee · (g_e − its own g_e)).
  Further constrained block columns: whole rows so drawn are kept with the product of their weights
  (exact: the proposal is the target without those factors); the probability multiplies in the
  acceptance rate, estimated on 20 000 proposals with a fixed seed.

Exact for the model; only a condition on several Gaussian columns rejects (on those columns alone). Post-processing; NumPy/SciPy only (runs on Spark workers).
"""

from __future__ import annotations

import numpy as np
from scipy.special import ndtr
from scipy.stats import truncnorm

from ...schema import Schema
from ..base import FittedModel
from ..evidence import Evidence
from ..stratified import inverse_cdf, stratified_choice, stratified_uniforms
from .components import draw_code_columns

#: Proposals that estimate the acceptance rate of a condition on several Gaussian columns.
ACCEPTANCE_TRIALS = 20_000

#: Most proposals drawn at once while accepting rows.
MAX_BATCH = 1_000_000

#: Bisection steps of F⁻¹ (the interval [μ ± 40σ] halved to far below float64 resolution of the codes).
_BISECTION_STEPS = 200


class ConditionedSplice(FittedModel):
    """A :class:`~.model.SpliceModel` given :class:`~..evidence.Evidence`: ``probability`` is the evidence's."""

    engine = "splice"

    def __init__(self, base, evidence: Evidence):
        self.base, self.evidence = base, evidence
        block = base.gaussian
        self.probabilities, factor = [], np.ones(len(base.weights))
        for j, p in zip(base.code_columns, base.probabilities):
            w = evidence.get(j)
            if w is None:
                self.probabilities.append(p)
                continue
            weighted = p * w
            sums = weighted.sum(axis=1)
            factor = factor * sums / p.sum(axis=1)
            self.probabilities.append(np.where(sums[:, None] > 0, weighted, p))
        self._cumulative = [np.cumsum(p, axis=1) for p in self.probabilities]
        constrained = [j for j in evidence.columns if block is not None and j in block.columns]
        self.column, self.others, self.acceptance = None, (), 1.0
        if block is not None:
            self.boundaries = _boundaries_of(base)
        if constrained:  # drawn exactly: the rarest; the others by accepting rows with their weights
            masses = {j: self._block_masses(j) for j in constrained}
            shares = {j: (base.weights * factor * _total(*masses[j])).sum() for j in constrained}
            self.column = min(constrained, key=lambda j: (shares[j], j))
            self.others = tuple(j for j in constrained if j != self.column)
            self.interval_mass, null_mass = masses[self.column]
            total = _total(self.interval_mass, null_mass)
            self.null_branch = np.divide(null_mass, total, out=np.zeros_like(total), where=total > 0)  # P_k(null | evidence)
            factor = factor * total
        self.posterior = base.weights * factor
        self.probability = float(self.posterior.sum() / base.weights.sum())
        if self.others and self.probability > 0:
            trial = self._proposals(ACCEPTANCE_TRIALS, np.random.default_rng(0))  # a fixed, public seed
            self.acceptance = float(self._accepted(trial, np.random.default_rng(1)).mean())
            self.probability *= self.acceptance

    def _accepted(self, codes: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Which proposals to keep: each with the product of the other constrained columns' weights."""
        weight = np.ones(len(codes))
        for j in self.others:
            weight = weight * self.evidence.get(j)[codes[:, j]]
        return rng.random(len(codes)) < weight

    def _block_masses(self, column: int) -> tuple[np.ndarray, np.ndarray]:
        """For a constrained block column, per component: each code interval's probability times its
        weight, (K, bins), and the null code's (its null share times its weight; K values)."""
        block, i = self.base.gaussian, self.base.gaussian.columns.index(column)
        w, share = self.evidence.get(column), block.null_share[i]
        n_bins = len(self.boundaries[i]) - 1
        mean, std = block.mean[:, i], block.column_std()[:, i]
        cdf = ndtr((self.boundaries[i][None, :] - mean[:, None]) / std[:, None])  # (K, n_bins + 1)
        null_mass = np.full(len(mean), share * (w[n_bins] if len(w) > n_bins else 0.0))
        return (1 - share) * np.diff(cdf, axis=1) * w[:n_bins], null_mass

    def sample_codes(self, n_rows: int, rng: np.random.Generator) -> np.ndarray:
        if not self.others:
            return self._proposals(n_rows, rng)
        kept, have = [], 0
        while have < n_rows:  # whole rows are accepted (component included): exact for the joint
            batch = self._proposals(int(min(MAX_BATCH, np.ceil(1.2 * (n_rows - have) / self.acceptance) + 64)), rng)
            kept.append(batch[self._accepted(batch, rng)])
            have += len(kept[-1])
        return np.concatenate(kept)[:n_rows]

    def _proposals(self, n_rows: int, rng: np.random.Generator) -> np.ndarray:
        """Rows given the code columns' evidence and the exactly drawn block column's."""
        components = stratified_choice(self.posterior, n_rows, rng)
        codes = np.empty((n_rows, self.base.n_columns), dtype=np.int64)
        draw_code_columns(codes, components, self.base.code_columns, self._cumulative, rng)
        if self.base.gaussian is not None:
            codes[:, list(self.base.gaussian.columns)] = self._block_codes(components, rng)
        return codes

    def _block_codes(self, components: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        block = self.base.gaussian
        latent = block.draw(components, rng)
        n = len(components)
        fixed_codes, fixed_null = None, np.zeros(n, dtype=bool)
        if self.column is not None:
            i = block.columns.index(self.column)
            fixed_null = stratified_uniforms(n, rng, components) < self.null_branch[components]
            fixed_codes = np.zeros(n, dtype=np.int64)
            value = latent[:, i].copy()
            for k in np.unique(components[~fixed_null]):
                rows = np.flatnonzero((components == k) & ~fixed_null)
                fixed_codes[rows] = inverse_cdf(np.cumsum(self.interval_mass[k]), stratified_uniforms(len(rows), rng))
                edges, mean, std = self.boundaries[i], block.mean[k, i], block.column_std()[k, i]
                low, high = (edges[fixed_codes[rows]] - mean) / std, (edges[fixed_codes[rows] + 1] - mean) / std
                value[rows] = mean + std * truncnorm.ppf(rng.random(len(rows)), low, high)
            latent = _given(block, components, latent, i, value)
        out = np.empty(latent.shape, dtype=np.int64)
        for i, edges in enumerate(self.boundaries):
            n_bins = len(edges) - 1
            out[:, i] = np.clip(np.searchsorted(edges, latent[:, i], side="right") - 1, 0, n_bins - 1)
            if fixed_codes is not None and block.columns[i] == self.column:
                out[:, i] = np.where(fixed_null, n_bins, fixed_codes)
            elif block.null_share[i] > 0:
                out[stratified_uniforms(n, rng) < block.null_share[i], i] = n_bins
        return out

    def to_state(self) -> dict:
        return {"base": self.base.to_state(), "evidence": {str(j): w.tolist() for j, w in self.evidence.weights.items()}}

    @classmethod
    def from_state(cls, state: dict, schema: Schema) -> "ConditionedSplice":
        from .. import model_class  # the registry: this module does not import the model's

        evidence = Evidence({int(j): np.asarray(w) for j, w in state["evidence"].items()})
        return cls(model_class("splice").from_state(state["base"], schema), evidence)


def _total(interval_mass: np.ndarray, null_mass: np.ndarray) -> np.ndarray:
    """Per component: the probability of a block column's evidence, from :meth:`ConditionedSplice._block_masses`."""
    return null_mass + interval_mass.sum(axis=1)


def _boundaries_of(base) -> list[np.ndarray]:
    """Every block column's latent code intervals (:func:`_latent_boundaries`), computed once per model
    and kept on it (``--rows-per`` conditions one model once per stratum)."""
    if getattr(base, "_latent_boundaries", None) is None:
        block = base.gaussian
        base._latent_boundaries = [_latent_boundaries(block, i, base.weights) for i in range(len(block.columns))]
    return base._latent_boundaries


def _latent_boundaries(block, i: int, weights: np.ndarray) -> np.ndarray:
    """Block column i's code intervals in latent space: −inf, the inner boundaries, +inf. Calibrated:
    F⁻¹ of the calibration's cumulative shares (F: the mixture's marginal CDF); clipped: the public
    bin edges (the first and last bins also take what clipping puts in them)."""
    edges = block.edges[i]
    if block.calibration is None:
        inner = edges[1:-1]
    else:
        shares = np.cumsum(block.calibration[i]) / block.calibration[i].sum()
        inner = _inverse_cdf(block, i, weights, shares[:-1])
    return np.concatenate([[-np.inf], inner, [np.inf]])


def _inverse_cdf(block, i: int, weights: np.ndarray, targets: np.ndarray) -> np.ndarray:
    std = block.column_std()[:, i]
    low = np.full(len(targets), float(np.min(block.mean[:, i] - 40 * std)))
    high = np.full(len(targets), float(np.max(block.mean[:, i] + 40 * std)))
    for _ in range(_BISECTION_STEPS):
        middle = (low + high) / 2
        below = block.model_cdf(i, middle, weights) < targets
        low, high = np.where(below, middle, low), np.where(below, high, middle)
    return (low + high) / 2


def _given(block, components: np.ndarray, latent: np.ndarray, i: int, value: np.ndarray) -> np.ndarray:
    """Latent rows with column i set to ``value`` and the others drawn given it (Matheron's rule per component)."""
    out = latent.copy()
    for k in np.unique(components):
        rows = components == k
        covariance = block.factor[k] @ block.factor[k, i] + np.eye(latent.shape[1])[i] * block.diag[k, i]  # Σ[:, i]
        out[rows] += np.outer(value[rows] - latent[rows, i], covariance / covariance[i])
    return out
