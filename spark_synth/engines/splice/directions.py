"""Random projection directions over the public embedding (data-independent, seeded).

* dense directions (the paper's): a uniform random unit vector over all coordinates, scaled by
  1/√d (d = number of columns), so |wᵀx| ≤ 1 for every row;
* sparse directions: a random unit vector on the blocks of a column pair, scaled by 1/√2 (pairs
  taken in seeded random order, cycling, so every pair gets ⌊n_sparse / pairs⌋ or one more),
  so the projection fills [-1, 1] and the moments resolve pairwise structure.
"""

from __future__ import annotations

import itertools

import numpy as np

from ...schema import Schema
from ...schema.embedding import Embedding


def make_directions(schema: Schema, n_dense: int, n_sparse: int, seed: int) -> tuple[np.ndarray, list[tuple[int, ...]]]:
    """(L, D) direction matrix and, per direction, the indices of the columns it touches."""
    embedding = Embedding(schema)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 0x5A1CE]))
    d = len(schema)
    rows, supports = [], []
    for _ in range(n_dense):
        v = rng.standard_normal(embedding.width)
        rows.append(v / np.linalg.norm(v) / np.sqrt(d))
        supports.append(tuple(range(d)))
    pair_size = min(2, d)
    pairs = [tuple(p) for p in itertools.combinations(range(d), pair_size)]
    order: list[int] = []
    for _ in range(n_sparse):  # every pair covered evenly: cycle through seeded permutations
        if not order:
            order = rng.permutation(len(pairs)).tolist()
        columns = pairs[order.pop()]
        v = np.zeros(embedding.width)
        for j in columns:
            block = embedding.block(j)
            v[block] = rng.standard_normal(block.stop - block.start)
        rows.append(v / np.linalg.norm(v) / np.sqrt(pair_size))
        supports.append(columns)
    return np.asarray(rows).reshape(-1, embedding.width), supports
