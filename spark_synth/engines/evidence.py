"""Evidence: what a conditioned sample must satisfy, as one weight per code of each constrained column.

A condition that is a conjunction of per-column constraints (``defaulted = 'Yes' AND age >= 65``)
factorises over the columns: row x satisfies it with probability Π_j w_j(x_j), where w_j(c) ∈ [0, 1]
is the share of code c's decoded values that satisfy column j's constraint (1 or 0 for categories,
the in-set share of a numeric bin). A model conditioned on the evidence samples rows ∝ p(x) Π_j w_j(x_j)
— exactly what "sample, decode, keep the rows that satisfy it" gives, without rejecting anything — and
the evidence's model probability is Σ_x p(x) Π_j w_j(x_j). Public: it comes from the user's condition
and the schema, never from data. Engines condition on it in :meth:`FittedModel.conditioned`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np

#: A log-weight standing in for log 0 in log-potential tables (finite, and far below the fit's own
#: "no mass" values, so a forbidden code never outweighs a code the fit merely gave no mass).
LOG_ZERO = -1.0e6

#: Model probabilities at or below this are numerical zeros: a condition the model gives no support.
SMALLEST_PROBABILITY = 1e-12


class Evidence:
    """Column position → weights over its codes (each in [0, 1], at least one > 0)."""

    def __init__(self, weights: Mapping[int, np.ndarray]):
        self.weights = {int(j): np.asarray(w, dtype=np.float64) for j, w in weights.items()}
        for j, w in self.weights.items():
            if w.ndim != 1 or not np.all((w >= 0) & (w <= 1)):
                raise ValueError(f"evidence on column {j} must be weights in [0, 1], one per code")

    @property
    def columns(self) -> tuple[int, ...]:
        return tuple(sorted(self.weights))

    def __bool__(self) -> bool:
        return bool(self.weights)

    def get(self, j: int) -> np.ndarray | None:
        return self.weights.get(j)

    def for_columns(self, columns: Sequence[int]) -> "Evidence":
        """The evidence on ``columns`` only, re-numbered by their position in ``columns`` (a DGM partition's view)."""
        position = {int(j): i for i, j in enumerate(columns)}
        return Evidence({position[j]: w for j, w in self.weights.items() if j in position})

    def row_weights(self, codes: np.ndarray) -> np.ndarray:
        """Π_j w_j(codes[:, j]) per row of an (n, d) code matrix."""
        out = np.ones(len(codes))
        for j, w in self.weights.items():
            out = out * w[codes[:, j]]
        return out

    def and_code(self, j: int, code: int, size: int) -> "Evidence":
        """This evidence and "column j has code ``code``" (a stratum of ``--rows-per``)."""
        only = np.zeros(size)
        only[code] = 1.0
        weights = dict(self.weights)
        weights[j] = only if j not in weights else weights[j] * only
        return Evidence(weights)


def log_weights(w: np.ndarray) -> np.ndarray:
    """log w with :data:`LOG_ZERO` for 0 (a finite log-potential that gives the code no mass)."""
    w = np.asarray(w, dtype=np.float64)
    with np.errstate(divide="ignore"):
        return np.where(w > 0, np.log(np.where(w > 0, w, 1.0)), LOG_ZERO)


def conditioned_distribution(p: np.ndarray, w: np.ndarray | None) -> tuple[np.ndarray, float]:
    """(p·w normalised, Σ p·w / Σ p) for a distribution ``p`` over one column's codes (p itself when w is None)."""
    p = np.asarray(p, dtype=np.float64)
    if w is None:
        return p, 1.0
    weighted = p * w
    total = weighted.sum()
    return (weighted / total if total > 0 else weighted), float(total / p.sum()) if p.sum() > 0 else 0.0
