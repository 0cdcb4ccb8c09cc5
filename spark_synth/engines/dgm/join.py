"""The validator join: random concatenations of partition pieces, kept by the validator's score.

Rounds, as in the DGM paper's reference code: pieces drawn from each partition's model are
concatenated at random into ``multiplier`` × (rows still missing, at least 1024) candidate rows, the validator
scores them, and accepted candidates become output rows; a round that accepts nothing counts
against ``patience``. ``acceptance="threshold"`` (the paper) keeps candidates scoring ≥ θ, set
once from the first round to the score its top ``keep_fraction`` reach. ``"ratio"`` (default) keeps
each with probability exp(s − θ), θ the first round's highest score — rejection sampling by the
estimated density ratio exp(s), which moves joined rows towards the real joint rather than
towards its mode (exact while no later score exceeds θ; those are kept with probability 1). Each
round draws fresh pieces (the reference reshuffles the rejected ones; the pool they leave is no
longer a sample of the partition models, which would bias what later rounds accept). Rows still
missing when the rounds end are random joins, counted in ``filled``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Sequence

import numpy as np


#: Fewest candidates a round draws (per ``multiplier``), so the last missing rows are not left to patience.
MIN_BATCH = 1024


@dataclass(frozen=True)
class JoinSettings:
    multiplier: int = 3
    max_rounds: int = 100
    patience: int = 3
    keep_fraction: float = 0.1
    acceptance: str = "ratio"


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
    accepted, need, theta, idle = [], n_rows, None, 0
    for _ in range(settings.max_rounds):
        if need == 0:
            break
        batch = settings.multiplier * max(need, min(n_rows, MIN_BATCH))  # the last few rows still get a real chance
        candidates = assemble([draw(p, batch) for p in parts], partitions, n_columns)
        scores = score(candidates)
        if settings.acceptance == "threshold":
            theta = float(np.quantile(scores, 1.0 - settings.keep_fraction)) if theta is None else theta
            keep = scores >= theta
        else:
            theta = float(scores.max()) if theta is None else theta
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
