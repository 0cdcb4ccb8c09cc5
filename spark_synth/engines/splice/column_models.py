"""How SPLICE models each column, from the public domains and the DP 1-way anchors (post-processing):
the Gaussian block's columns, the columns with one distribution shared by every component, and the
knots that encode numeric columns for the moments."""

from __future__ import annotations

from typing import Sequence

import numpy as np

from ...schema import Schema
from .match import null_share


def encoding_knots(schema: Schema, anchors, mix: float) -> dict[str, np.ndarray]:
    """Per numeric column, the images in [-1, 1] of its public bin edges: 2·(mix·F + (1−mix)·U) − 1,
    F the DP 1-way CDF over its non-null bins and U the uniform (affine) one. Post-processing only."""
    if mix == 0 or anchors is None:
        return {}
    knots = {}
    for j, column in enumerate(schema):
        if column.type.is_discrete:
            continue
        mass = np.asarray(anchors[j][: column.n_values], dtype=np.float64)
        cdf = np.concatenate([[0.0], np.cumsum(mass)]) / mass.sum() if mass.sum() > 0 else np.linspace(0, 1, column.n_values + 1)
        mixed = 2.0 * (mix * cdf + (1.0 - mix) * np.linspace(0.0, 1.0, column.n_values + 1)) - 1.0
        mixed[0], mixed[-1] = -1.0, 1.0
        knots[column.name] = np.maximum.accumulate(np.clip(mixed, -1.0, 1.0))
    return knots


def gaussian_columns(schema: Schema, numeric_model: str, anchors=None, max_null_share: float = 0.0) -> tuple[int, ...]:
    """Columns modelled by the Gaussian block (``numeric_model="gaussian"`` only): integer/continuous
    columns that cannot hold nulls, or whose DP null share (from the 1-way anchors: post-processing)
    is at most ``max_null_share``. The closed form treats the block's rows as non-null; sampling
    then nulls each such column independently at its DP share. Numeric columns with more nulls keep
    a code distribution (bins + null code), whose closed form is exact.
    """
    if numeric_model != "gaussian":
        return ()
    out = []
    for j, c in enumerate(schema):
        if c.type.is_discrete:
            continue
        if not c.nullable or (anchors is not None and null_share(anchors[j], c) <= max_null_share):
            out.append(j)
    return tuple(out)


def shared_columns(schema: Schema, gaussian: Sequence[int], max_component_codes: int) -> frozenset[int]:
    """Code-modelled columns with more than ``max_component_codes`` codes: one distribution shared by
    every component (public: from the domains). Per-component distributions over that many codes are
    noise at the moments' resolution (diabetes_readmission's 916 ICD-9 codes: each such pair's TVD
    was above its independent value); shared, the column is independent of the rest in the model."""
    return frozenset(j for j, c in enumerate(schema) if j not in gaussian and c.size > max_component_codes)
