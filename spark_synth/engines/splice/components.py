"""Drawing the code-modelled columns of rows whose mixture components are known (SPLICE's sampler)."""

from __future__ import annotations

import numpy as np

from ..stratified import stratified_uniforms


def draw_code_columns(codes: np.ndarray, components: np.ndarray, code_columns, cumulatives, rng: np.random.Generator) -> None:
    """Fill ``codes[:, j]`` for each code-modelled column j from its row's component's code distribution
    (``cumulatives``: per column, (K, size) cumulative weights), with uniforms stratified by component."""
    n_rows = len(components)
    order = np.argsort(components, kind="stable")  # rows grouped by component
    n_components = cumulatives[0].shape[0] if cumulatives else 0
    bounds = np.searchsorted(components[order], np.arange(n_components + 1))
    for j, cdf in zip(code_columns, cumulatives):
        u = stratified_uniforms(n_rows, rng, components) * cdf[components, -1]
        column = np.empty(n_rows, dtype=np.int64)
        for k in range(n_components):  # the code: how many of the component's CDF values are ≤ u
            rows = order[bounds[k]:bounds[k + 1]]
            column[rows] = np.searchsorted(cdf[k], u[rows], side="right")
        codes[:, j] = np.minimum(column, cdf.shape[1] - 1)
