"""Domain compression from the noisy 1-way histograms (MST's, post-processing of DP releases).

A column's codes (or its public numeric ranges) whose noisy count is below ``threshold`` standard
deviations of its noise are merged into one group: marginals over the compressed domain have
fewer cells, so they carry less noise and the model is smaller. Sampled groups become codes again
through the noisy 1-way distribution (the model's refinements).
"""

from __future__ import annotations

import numpy as np


def compress(grouping, noisy_counts: np.ndarray, sigma: float, threshold: float) -> tuple[int, ...] | None:
    """A grouping of the column's codes (numbered 0..G−1) that keeps every group of ``grouping``
    (None: every code) whose noisy count is ≥ threshold·σ_group and merges the others into one,
    last group; ``grouping`` itself when fewer than two groups would merge."""
    noisy_counts = np.asarray(noisy_counts, dtype=np.float64)
    base = np.arange(noisy_counts.size) if grouping is None else np.asarray(grouping, dtype=np.int64)
    members = np.bincount(base)
    supported = np.bincount(base, weights=noisy_counts) >= threshold * sigma * np.sqrt(members)
    if np.count_nonzero(~supported) < 2:
        return None if grouping is None else tuple(int(g) for g in grouping)
    new_id = np.where(supported, np.cumsum(supported) - 1, np.count_nonzero(supported))
    return tuple(int(g) for g in new_id[base])


def refine(grouping, noisy_counts: np.ndarray, target: float) -> tuple[int, ...] | None:
    """Split each group of ``grouping`` (consecutive public ranges of an ordered column) whose noisy
    count is above ``target`` into runs of consecutive codes holding about ``target`` each, so a
    range that holds much of the data is modelled at a finer resolution (where its counts are far
    above the noise). Groups are renumbered in code order; a code outside every range (the null
    code) keeps its group."""
    if grouping is None:
        return None
    base = np.asarray(grouping, dtype=np.int64)
    counts = np.clip(np.asarray(noisy_counts, dtype=np.float64), 0.0, None)
    out, label = np.empty_like(base), -1
    for group in range(int(base.max()) + 1):
        codes = np.flatnonzero(base == group)
        runs, current, held = [], [], 0.0
        for code in codes:
            current.append(code)
            held += counts[code]
            if held >= target:
                runs.append(current)
                current, held = [], 0.0
        if current:
            if runs and held < target / 2:
                runs[-1].extend(current)  # a thin remainder joins the run before it
            else:
                runs.append(current)
        for run in runs:
            label += 1
            out[run] = label
    return tuple(int(g) for g in out)
