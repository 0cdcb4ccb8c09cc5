"""Closed-form, differentiable sliced Chebyshev moments of a mixture of product distributions.

Under one component, the projection z = wᵀx is a sum of independent per-column terms (each
column's embedded code vector projected on w). Power moments of a sum of independent variables
follow from the parts' moments by binomial convolution (done on moments scaled by 1/m!, where it
is a plain convolution), and E[T_j(z)] is a fixed linear map of E[z^0..z^k].
"""

from __future__ import annotations

import math

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


class SlicedMomentOperator:
    """Precomputed projections of every code on every direction; evaluates m_j(w_l, q)."""

    def __init__(self, code_projections: list[np.ndarray], column_directions: list[np.ndarray],
                 n_directions: int, degree: int, device: torch.device):
        self.degree, self.n_directions, self.device = degree, n_directions, device
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

    def component_moments(self, probabilities: list[torch.Tensor]) -> torch.Tensor:
        """(K, L, k): E[T_j(w_lᵀx)] under each component (product of the given per-column laws)."""
        n_components = probabilities[0].shape[0]
        acc = torch.zeros(n_components, self.n_directions, self.degree + 1, dtype=torch.float64, device=self.device)
        acc[:, :, 0] = 1.0
        for p, scaled, dirs in zip(probabilities, self.scaled_powers, self.column_directions):
            if dirs.numel() == 0:
                continue
            part = torch.einsum("kx,lxm->klm", p, scaled)  # scaled moments of this column's term
            current = acc[:, dirs]
            outer = (current[..., :, None] * part[..., None, :]).flatten(-2)  # (K, L_c, (k+1)^2)
            acc = acc.index_copy(1, dirs, outer @ self._fold)
        power_moments = acc * self._factorial
        return torch.einsum("klm,jm->klj", power_moments, self._cheb)

    def mixture_moments(self, weights: torch.Tensor, probabilities: list[torch.Tensor]) -> torch.Tensor:
        """(L, k): E_q[T_j(w_lᵀx)] for the mixture q = Σ_k weights[k] · component_k."""
        return torch.einsum("k,klj->lj", weights, self.component_moments(probabilities))
