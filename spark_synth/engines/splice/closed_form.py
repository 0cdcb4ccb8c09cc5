"""Closed-form, differentiable sliced Chebyshev moments of a mixture of product distributions.

Under one component, the projection z = wᵀx is a sum of independent parts: one per column that is
modelled as a distribution over its codes (the column's embedded code vector projected on w), and,
with ``numeric_model="gaussian"``, one for the block of numeric columns modelled jointly as a
Gaussian N(μ, UUᵀ + diag(D)), whose projection is the scalar Gaussian N(wᵀμ, ‖Uᵀw‖² + Σ w_i² D_i).
Power moments of a sum of independent variables follow from the parts' moments by binomial
convolution (done on moments scaled by 1/m!, where it is a plain convolution), and E[T_j(z)] is a
fixed linear map of E[z^0..z^k].
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


class SlicedMomentOperator:
    """Precomputed projections of every code on every direction; evaluates m_j(w_l, q).

    ``gaussian_directions`` (L, G), when given, holds each direction's weights on the value
    coordinates of the Gaussian-modelled numeric columns.
    """

    def __init__(self, code_projections: list[np.ndarray], column_directions: list[np.ndarray],
                 n_directions: int, degree: int, device: torch.device, gaussian_directions: np.ndarray | None = None):
        self.degree, self.n_directions, self.device = degree, n_directions, device
        self.gaussian_directions = (None if gaussian_directions is None
                                    else torch.as_tensor(gaussian_directions, dtype=torch.float64, device=device))
        powers = np.arange(degree + 1)
        inv_factorial = np.array([1.0 / math.factorial(m) for m in powers])
        # per column: (L_c, size_c, k+1) scaled powers v^m / m!
        self.scaled_powers = [
            torch.as_tensor(p[:, :, None] ** powers * inv_factorial, dtype=torch.float64, device=device)
            for p in code_projections
        ]
        self.column_directions = [torch.as_tensor(d, dtype=torch.long, device=device) for d in column_directions]
        # convolution as a matrix: (a, b) -> m = a + b, dropping m > degree
        a, b = np.meshgrid(powers, powers, indexing="ij")
        fold = np.zeros(((degree + 1) ** 2, degree + 1))
        keep = (a + b).ravel() <= degree
        fold[np.flatnonzero(keep), (a + b).ravel()[keep]] = 1.0
        self._fold = torch.as_tensor(fold, dtype=torch.float64, device=device)
        self._factorial = torch.as_tensor([math.factorial(m) for m in powers], dtype=torch.float64, device=device)
        self._cheb = torch.as_tensor(chebyshev_power_coefficients(degree), dtype=torch.float64, device=device)

    def component_moments(self, probabilities: list[torch.Tensor], gaussian: GaussianParameters | None = None,
                          n_components: int | None = None) -> torch.Tensor:
        """(K, L, k): E[T_j(w_lᵀx)] under each component (product of the per-column laws and the Gaussian block)."""
        if n_components is None:
            n_components = probabilities[0].shape[0] if probabilities else gaussian.mean.shape[0]
        acc = torch.zeros(n_components, self.n_directions, self.degree + 1, dtype=torch.float64, device=self.device)
        acc[:, :, 0] = 1.0
        for p, scaled, dirs in zip(probabilities, self.scaled_powers, self.column_directions):
            if dirs.numel() == 0:
                continue
            part = torch.einsum("kx,lxm->klm", p, scaled)  # scaled moments of this column's term
            acc = acc.index_copy(1, dirs, self._convolve(acc[:, dirs], part))
        if gaussian is not None:
            if self.gaussian_directions is None:
                raise ValueError("this operator was built without Gaussian columns")
            a = self.gaussian_directions
            mean = gaussian.mean @ a.T  # (K, L)
            variance = (torch.einsum("kgr,lg->klr", gaussian.factor, a) ** 2).sum(-1) + gaussian.diag @ (a**2).T
            acc = self._convolve(acc, gaussian_scaled_moments(mean, variance, self.degree))
        power_moments = acc * self._factorial
        return torch.einsum("klm,jm->klj", power_moments, self._cheb)

    def _convolve(self, current: torch.Tensor, part: torch.Tensor) -> torch.Tensor:
        """Scaled moments of a sum of independent terms from the terms' scaled moments (truncated at k)."""
        outer = (current[..., :, None] * part[..., None, :]).flatten(-2)  # (K, L', (k+1)^2)
        return outer @ self._fold

    def mixture_moments(self, weights: torch.Tensor, probabilities: list[torch.Tensor],
                        gaussian: GaussianParameters | None = None) -> torch.Tensor:
        """(L, k): E_q[T_j(w_lᵀx)] for the mixture q = Σ_k weights[k] · component_k."""
        return torch.einsum("k,klj->lj", weights, self.component_moments(probabilities, gaussian, len(weights)))
