"""Closed-form, differentiable sliced Chebyshev moments of a mixture of product distributions.

Under one component, the projection z = wᵀx is a sum of independent parts: one per column that is
modelled as a distribution over its codes (the column's embedded code vector projected on w), and,
with ``numeric_model="gaussian"``, one for the block of numeric columns modelled jointly as a
Gaussian N(μ, UUᵀ + diag(D)), whose projection is the scalar Gaussian N(wᵀμ, ‖Uᵀw‖² + Σ w_i² D_i).
Power moments of a sum of independent variables follow from the parts' moments by binomial
convolution: with moments scaled by 1/m! (the coefficients of the truncated moment generating
function M(t) = E[e^{tz}]) it is a product of truncated power series, done here as a sum of their
logarithms (the scaled cumulants, which add over independent parts) followed by one exponential;
all exact in the first k+1 coefficients. E[T_j(z)] is then a fixed linear map of E[z^0..z^k].
Series are laid out with the order on the first axis (contiguous per order).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np
import torch
from numpy.polynomial import chebyshev


def chebyshev_power_coefficients(degree: int) -> np.ndarray:
    """(degree, degree+1) matrix C with T_j(z) = Σ_m C[j-1, m] z^m for j = 1..degree."""
    out = np.zeros((degree, degree + 1))
    for j in range(1, degree + 1):
        basis = np.zeros(j + 1)
        basis[j] = 1.0
        out[j - 1, : j + 1] = chebyshev.cheb2poly(basis)
    return out


def gaussian_scaled_moments(mean: torch.Tensor, variance: torch.Tensor, degree: int) -> torch.Tensor:
    """E[G^m] / m! for m = 0..degree of G ~ N(mean, variance) (elementwise; stacked on a new last axis).

    From E[G^m] = mean·E[G^(m-1)] + (m-1)·variance·E[G^(m-2)]: M_m = (mean·M_(m-1) + variance·M_(m-2)) / m.
    """
    out = [torch.ones_like(mean), mean]
    for m in range(2, degree + 1):
        out.append((mean * out[-1] + variance * out[-2]) / m)
    return torch.stack(out[: degree + 1], dim=-1)


class GaussianParameters(NamedTuple):
    """Per-component Gaussian block over G numeric coordinates: mean (K, G), factor U (K, G, R), diag D (K, G)."""

    mean: torch.Tensor
    factor: torch.Tensor
    diag: torch.Tensor


def _orders(start: int, stop: int, like: torch.Tensor) -> torch.Tensor:
    """start..stop−1 shaped to broadcast over ``like``'s trailing axes."""
    return torch.arange(start, stop, dtype=like.dtype, device=like.device).view(-1, *([1] * (like.dim() - 1)))


class _SeriesLog(torch.autograd.Function):
    """Coefficients 1..k of log s for truncated power series s[0..k] (axis 0, s[0] > 0).

    From s·(log s)' = s': with d_m = m·c_m, s_0·d_m = m·s_m − Σ_{i=1..m−1} d_i·s_{m−i}. The differential
    is d(log s) = ds / s, so the gradient x solves the transposed triangular Toeplitz system
    Σ_{m ≥ n} s_{m−n}·x_m = g_n (back-substitution, g_0 = 0). Hand-written so a step costs O(k) tensor
    operations instead of an O(k²) autograd graph.
    """

    @staticmethod
    def forward(ctx, s):
        k = s.shape[0] - 1
        rev = torch.empty_like(s)  # rev[k − i] = d_i, so d_{m−1..1} is the contiguous slice rev[k−m+1:k]
        inv0 = 1.0 / s[0]
        for m in range(1, k + 1):
            acc = s[m] * float(m)
            if m > 1:
                acc -= (s[1:m] * rev[k - m + 1 : k]).sum(0)
            torch.mul(acc, inv0, out=rev[k - m])
        ctx.save_for_backward(s)
        return rev[:k].flip(0) / _orders(1, k + 1, s)

    @staticmethod
    def backward(ctx, grad):
        (s,) = ctx.saved_tensors
        k = s.shape[0] - 1
        inv0 = 1.0 / s[0]
        x = torch.empty_like(s)
        torch.mul(grad[k - 1], inv0, out=x[k])
        for n in range(k - 1, -1, -1):
            acc = -(s[1 : k - n + 1] * x[n + 1 :]).sum(0)
            if n > 0:
                acc += grad[n - 1]
            torch.mul(acc, inv0, out=x[n])
        return x


class _SeriesExp(torch.autograd.Function):
    """Coefficients 0..k of exp c for c given by its coefficients 1..k (axis 0; c_0 = 0).

    From e' = c'·e: m·e_m = Σ_{i=1..m} i·c_i·e_{m−i}; d(exp c) = e · dc, so the backward pass
    correlates the incoming gradient with e.
    """

    @staticmethod
    def forward(ctx, c):
        k = c.shape[0]
        d = c * _orders(1, k + 1, c)
        rev = torch.empty((k + 1, *c.shape[1:]), dtype=c.dtype, device=c.device)  # rev[k − j] = e_j
        rev[k] = 1.0
        for m in range(1, k + 1):
            rev[k - m] = (d[:m] * rev[k - m + 1 :]).sum(0) / m
        ctx.save_for_backward(rev)
        return rev.flip(0)

    @staticmethod
    def backward(ctx, grad):
        (rev,) = ctx.saved_tensors
        k = rev.shape[0] - 1
        out = grad[1:] * rev[k]  # out[n − 1] = Σ_{m ≥ n} grad_m · e_{m−n}, n = 1..k
        for j in range(1, k):
            out[: k - j].addcmul_(grad[1 + j :], rev[k - j])
        return out


def series_log(s: torch.Tensor) -> torch.Tensor:
    """(k, ...) coefficients 1..k of the logarithm of the truncated power series s (k+1, ...), s[0] > 0."""
    return _SeriesLog.apply(s)


def series_exp(c: torch.Tensor) -> torch.Tensor:
    """(k+1, ...) coefficients of the exponential of the series with coefficients c (k, ...) at orders 1..k."""
    return _SeriesExp.apply(c)


class SlicedMomentOperator:
    """Precomputed projections of every code on every direction; evaluates m_j(w_l, q).

    ``gaussian_directions`` (L, G), when given, holds each direction's weights on the value
    coordinates of the Gaussian-modelled numeric columns. Code-column probabilities are rows of
    distributions (each row is treated as normalised).
    """

    def __init__(self, code_projections: list[np.ndarray], column_directions: list[np.ndarray],
                 n_directions: int, degree: int, device: torch.device, gaussian_directions: np.ndarray | None = None):
        self.degree, self.n_directions, self.device = degree, n_directions, device
        self.gaussian_directions = (None if gaussian_directions is None
                                    else torch.as_tensor(gaussian_directions, dtype=torch.float64, device=device))
        self._gaussian_squared = None if self.gaussian_directions is None else self.gaussian_directions**2
        powers = np.arange(degree + 1)
        inv_factorial = np.array([1.0 / math.factorial(m) for m in powers])
        # per column with directions: ((k+1)·L_c, size_c) scaled powers v^m / m!, rows ordered (m, direction)
        self._live = [i for i, d in enumerate(column_directions) if len(d)]
        self._code_maps = [
            torch.as_tensor((code_projections[i][None, :, :] ** powers[:, None, None] * inv_factorial[:, None, None])
                            .reshape(-1, code_projections[i].shape[1]), dtype=torch.float64, device=device)
            for i in self._live
        ]
        self.column_directions = [torch.as_tensor(d, dtype=torch.long, device=device) for d in column_directions]
        self._pairs = (torch.cat([self.column_directions[i] for i in self._live]) if self._live
                       else torch.zeros(0, dtype=torch.long, device=device))
        self._factorial = torch.as_tensor([math.factorial(m) for m in powers], dtype=torch.float64, device=device)
        self._cheb = torch.as_tensor(chebyshev_power_coefficients(degree), dtype=torch.float64, device=device)

    def scaled_moments(self, probabilities: list[torch.Tensor], gaussian: GaussianParameters | None = None,
                       n_components: int | None = None) -> torch.Tensor:
        """(k+1, L, K): E[(w_lᵀx)^m] / m! under each component, m = 0..k."""
        if n_components is None:
            n_components = probabilities[0].shape[0] if probabilities else gaussian.mean.shape[0]
        k1 = self.degree + 1
        cumulants = torch.zeros(self.degree, self.n_directions, n_components, dtype=torch.float64, device=self.device)
        if self._live:
            parts = [(matrix @ probabilities[i].T).view(k1, -1, n_components) for i, matrix in zip(self._live, self._code_maps)]
            # (k+1, P, K) scaled moments of every (column, direction) term → their scaled cumulants, summed per direction
            cumulants = cumulants.index_add(1, self._pairs, series_log(torch.cat(parts, 1)))
        if gaussian is not None:
            if self.gaussian_directions is None:
                raise ValueError("this operator was built without Gaussian columns")
            a = self.gaussian_directions
            mean = a @ gaussian.mean.T  # (L, K)
            variance = (torch.einsum("kgr,lg->lkr", gaussian.factor, a) ** 2).sum(-1) + self._gaussian_squared @ gaussian.diag.T
            # a Gaussian's scaled cumulants: mean at order 1, variance / 2! at order 2, none above
            cumulants = torch.cat([(cumulants[0] + mean)[None], (cumulants[1] + 0.5 * variance)[None], cumulants[2:]], 0)
        return series_exp(cumulants)

    def component_moments(self, probabilities: list[torch.Tensor], gaussian: GaussianParameters | None = None,
                          n_components: int | None = None) -> torch.Tensor:
        """(K, L, k): E[T_j(w_lᵀx)] under each component (product of the per-column laws and the Gaussian block)."""
        scaled = self.scaled_moments(probabilities, gaussian, n_components)
        return torch.einsum("mlk,jm->klj", scaled * self._factorial[:, None, None], self._cheb)

    def mixture_moments(self, weights: torch.Tensor, probabilities: list[torch.Tensor],
                        gaussian: GaussianParameters | None = None) -> torch.Tensor:
        """(L, k): E_q[T_j(w_lᵀx)] for the mixture q = Σ_k weights[k] · component_k."""
        scaled = self.scaled_moments(probabilities, gaussian, len(weights)) @ weights  # (k+1, L)
        return (self._cheb @ (scaled * self._factorial[:, None])).T
