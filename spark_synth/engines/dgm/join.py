"""The validator join: random concatenations of partition pieces, kept by the validator's score.

``acceptance="swap"`` (default): one piece per output row is drawn from each partition's model and
the pieces are re-matched by ``swap_sweeps`` sweeps of Metropolis swaps towards ∝ exp(Σ s) — every
piece used once, so each partition's sample stays exactly as its model drew it (measured: it
recovers far more of the cross-partition structure than resampling, and keeps the within-partition
pairs, docs/dgm.md). ``"resample"``: every output row is picked among ``candidates_per_row`` random
joins with probability ∝ exp(s) (sampling–importance–resampling towards the validator's estimate of
the real joint). The two others follow the DGM paper's rounds: pieces drawn from each partition's
model are concatenated at random into ``join_multiplier`` × (rows still missing, at least 1024)
candidate rows, the validator scores them, accepted candidates become output rows; a round that
accepts nothing counts against ``patience``. θ is set once, from the first round, to the score its
top ``keep_fraction`` reach; ``"threshold"`` (the paper) keeps candidates scoring ≥ θ, ``"ratio"``
keeps each with probability min(1, exp(s − θ)) (rejection sampling, truncated at θ). Each round draws
fresh pieces: the reference reshuffles the rejected ones, but that pool is no longer a sample of the
partition models and biases what later rounds accept. Rows still missing when the rounds end are
random joins, counted in ``filled``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np


#: Fewest candidates a round draws (per ``join_multiplier``), so the last missing rows are not left to patience.
MIN_BATCH = 1024


#: Rows joined at a time by the resampling join (bounds its memory: rows × candidates × columns codes).
RESAMPLE_BLOCK = 2048


@dataclass(frozen=True)
class JoinSettings:
    """The join options of :class:`~.config.DgmConfig` (same names), as the fitted model keeps them."""

    join_multiplier: int = 3
    max_rounds: int = 100
    patience: int = 3
    keep_fraction: float = 0.1
    acceptance: str = "swap"
    candidates_per_row: int = 50
    swap_sweeps: int = 100


def assemble(pieces: Sequence[np.ndarray], partitions: Sequence[tuple[int, ...]], n_columns: int) -> np.ndarray:
    """Full code rows from row-aligned pieces (piece p holds the columns of ``partitions[p]``)."""
    rows = np.empty((len(pieces[0]), n_columns), dtype=np.int64)
    for piece, columns in zip(pieces, partitions):
        rows[:, list(columns)] = piece
    return rows


def validator_join(draw: Callable[[int, int], np.ndarray], partitions: Sequence[tuple[int, ...]], n_columns: int,
                   n_rows: int, score: Callable[[np.ndarray], np.ndarray] | None, settings: JoinSettings,
                   rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """``n_rows`` joined code rows and how many were filled by random joins. ``draw(p, m)`` samples m
    pieces of partition p; ``score`` None is the random join."""
    parts = range(len(partitions))
    if score is None:
        return assemble([draw(p, n_rows) for p in parts], partitions, n_columns), 0
    if settings.acceptance == "resample":
        return resample_join(draw, partitions, n_columns, n_rows, score, settings.candidates_per_row, rng), 0
    if settings.acceptance == "swap":
        return swap_join(draw, partitions, n_columns, n_rows, score, settings.swap_sweeps, rng), 0
    accepted, need, theta, idle = [], n_rows, None, 0
    for _ in range(settings.max_rounds):
        if need == 0:
            break
        batch = settings.join_multiplier * max(need, min(n_rows, MIN_BATCH))  # the last few rows still get a real chance
        candidates = assemble([draw(p, batch) for p in parts], partitions, n_columns)
        scores = score(candidates)
        if theta is None:
            theta = float(np.quantile(scores, 1.0 - settings.keep_fraction))
        if settings.acceptance == "threshold":
            keep = scores >= theta
        else:
            keep = rng.random(len(candidates)) < np.exp(np.minimum(scores - theta, 0.0))
        chosen = np.flatnonzero(keep)[:need]
        if len(chosen) == 0:
            idle += 1
            if idle >= settings.patience:
                break
            continue
        idle = 0
        accepted.append(candidates[chosen])
        need -= len(chosen)
    filled = need
    if need:
        accepted.append(assemble([draw(p, need) for p in parts], partitions, n_columns))
    rows = np.concatenate(accepted)
    return rows[rng.permutation(len(rows))], filled


def swap_join(draw, partitions, n_columns: int, n_rows: int, score, sweeps: int, rng: np.random.Generator) -> np.ndarray:
    """``n_rows`` pieces drawn from each partition model, matched by Metropolis swaps: each sweep
    pairs the rows at random and, for one partition at a time, exchanges the two rows' pieces with
    probability min(1, exp(Δs)). Every piece is used exactly once, so each partition keeps its
    model's sample as drawn (its within-partition structure intact), while the matching moves
    towards ∝ exp(Σ s) — the validator's estimate of the real joint, restricted to those pieces."""
    rows = assemble([draw(p, n_rows) for p in range(len(partitions))], partitions, n_columns)
    scores = score(rows)
    half = n_rows // 2
    partitions = [list(columns) for columns in partitions]
    for _ in range(sweeps):
        for columns in partitions[1:]:  # moving every partition but one covers every matching
            order = rng.permutation(n_rows)
            a, b = order[:half], order[half: 2 * half]
            swapped_a, swapped_b = rows[a], rows[b]  # fancy indexing: copies
            swapped_a[:, columns], swapped_b[:, columns] = rows[b][:, columns], rows[a][:, columns]
            new_a, new_b = score(swapped_a), score(swapped_b)
            accept = np.log(rng.random(half)) < new_a + new_b - scores[a] - scores[b]
            rows[a[accept]], rows[b[accept]] = swapped_a[accept], swapped_b[accept]
            scores[a[accept]], scores[b[accept]] = new_a[accept], new_b[accept]
    return rows


def resample_join(draw, partitions, n_columns: int, n_rows: int, score, candidates: int, rng: np.random.Generator) -> np.ndarray:
    """Each output row is one of ``candidates`` random joins, picked with probability ∝ exp(score)
    (sampling–importance–resampling: as ``candidates`` grows the rows follow p_join·exp(s), the
    validator's estimate of the real joint; every row gets its own candidates, so no candidate
    with an extreme score can crowd the others out)."""
    out = []
    for start in range(0, n_rows, RESAMPLE_BLOCK):
        size = min(RESAMPLE_BLOCK, n_rows - start)
        pool = assemble([draw(p, size * candidates) for p in range(len(partitions))], partitions, n_columns)
        scores = score(pool).reshape(size, candidates)
        weights = np.exp(scores - scores.max(axis=1, keepdims=True))
        cumulative = np.cumsum(weights, axis=1)
        pick = (cumulative < rng.random((size, 1)) * cumulative[:, -1:]).sum(axis=1)
        out.append(pool.reshape(size, candidates, n_columns)[np.arange(size), np.minimum(pick, candidates - 1)])
    return np.concatenate(out)
