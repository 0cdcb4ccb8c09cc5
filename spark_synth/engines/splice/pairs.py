"""SPLICE's pair anchors: DP 2-way tables of the pairs a first moment fit misses most, matched in Match.

Sliced moments pin down the 1-way laws and much of the numeric dependence, but even noiseless they
leave some categorical pairs loose: on adult a Match on exact moments reached 2-way TVD 0.050 where
a mixture of as many products fitted to the rows by EM reaches 0.024, and the worst pair
(education × education-num, one a function of the other) stayed at 0.78, as if independent
(docs/splice.md, "Pair anchors"). So a first Match on the moments (post-processing) answers every
candidate pair's 2-way table (numeric and ordinal columns merged into at most ``pair_groups``
public ranges); in each of ``pair_count`` rounds the exponential mechanism picks the table the
model misses most, less its expected noise (AIM's score); the chosen tables are measured with the
rest of the share ``pair_share`` of ρ, and the final Match fits the moments and these tables together.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple, Sequence

import numpy as np

from ...privacy import NoisyMeasurement
from ...queries import MarginalQuery
from ...schema import Schema

#: Rows drawn from the first model to score the candidate pairs (post-processing; a public constant).
SCORING_ROWS = 100_000
#: Share of each pair round's ρ that selects the pair (the rest measures it), as AIM's.
PAIR_SELECT_SHARE = 0.1
#: Largest pair table measured (cells over groups): beyond it the noise swamps the shares.
PAIR_MAX_CELLS = 4096


def model_tables(model, pairs: Sequence[tuple[int, int]], queries: Sequence[MarginalQuery], schema: Schema, rows: float,
                 rng: np.random.Generator) -> list[np.ndarray]:
    """The model's answers to the pair ``queries`` in counts of ``rows`` rows, estimated from
    ``SCORING_ROWS`` of its draws (post-processing)."""
    codes = model.sample_codes(SCORING_ROWS, rng)
    out = []
    for (a, b), query in zip(pairs, queries):
        shape = query.answer_shape(schema)
        grouped = [codes[:, j] if groups is None else np.asarray(groups)[codes[:, j]]
                   for j, groups in zip((a, b), query.groupings or (None, None))]
        table = np.bincount(grouped[0] * shape[1] + grouped[1], minlength=shape[0] * shape[1]).reshape(shape)
        out.append(table * (rows / SCORING_ROWS))
    return out


def candidate_pairs(schema: Schema, gaussian: Sequence[int]) -> list[tuple[int, int]]:
    """Every pair of columns except two Gaussian-modelled ones (their dependence is the block's)."""
    return [(a, b) for a, b in itertools.combinations(range(len(schema)), 2) if not (a in gaussian and b in gaussian)]


def pair_query(schema: Schema, pair: tuple[int, int], groupings) -> MarginalQuery:
    a, b = pair
    return MarginalQuery(columns=(schema.columns[a].name, schema.columns[b].name), groupings=(groupings[a], groupings[b]))


class PairTarget(NamedTuple):
    """A measured pair's noisy table as shares of the DP row count, and its noise σ in those units."""

    columns: tuple[int, int]
    groupings: tuple
    shares: np.ndarray
    sigma: float


def pair_targets(schema: Schema, measurements: Sequence[NoisyMeasurement], rows: float) -> list[PairTarget]:
    """The 2-way releases among ``measurements`` as :class:`PairTarget`."""
    index = {c.name: j for j, c in enumerate(schema)}
    out = []
    for m in measurements:
        if isinstance(m.query, MarginalQuery) and len(m.columns) == 2:
            groupings = m.query.groupings or (None, None)
            out.append(PairTarget(tuple(index[c] for c in m.columns), groupings, np.asarray(m.values, dtype=np.float64) / rows,
                                  float(m.sigma) / rows))
    return out
