"""Privacy proxies (empirical, NOT a privacy guarantee: the DP guarantee is the accountant's).

All on the public encoding (:mod:`~spark_synth.evaluate.encoding`), with equally sized bounded samples
of the synthetic table, of the real train part (what the synthesizer saw) and of the real hold-out part (what it never saw):

* distance to closest record (DCR): for each synthetic row, the Euclidean distance to its nearest
  train row and to its nearest hold-out row (median and 5th percentile of each);
* ``share_closer_to_train``: the share of synthetic rows strictly closer to train than to hold-out
  (ties count one half). About 0.5 when the synthesizer does not copy its training rows; 1.0 for a
  copy of the train table;
* ``membership_auc``: a distance-based membership-inference attack. The attacker scores a real
  row by how close the nearest synthetic row is; the AUC of separating train rows (members) from
  hold-out rows (non-members) by that score. 0.5 = no better than guessing.
"""

from __future__ import annotations

import numpy as np


def nearest_distances(queries: np.ndarray, reference: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """Euclidean distance from each query row to its nearest reference row (exact, chunked)."""
    if len(reference) == 0:
        return np.full(len(queries), np.inf)
    ref_sq = (reference * reference).sum(axis=1)
    out = np.empty(len(queries))
    for start in range(0, len(queries), chunk):
        q = queries[start:start + chunk]
        d = (q * q).sum(axis=1)[:, None] + ref_sq[None, :] - 2.0 * q @ reference.T
        out[start:start + chunk] = np.sqrt(np.maximum(d.min(axis=1), 0.0))
    # Exact zero for exact copies (the expansion above leaves round-off of ~1e-8).
    out[out < 1e-6] = 0.0
    return out


def privacy_proxies(train: np.ndarray, holdout: np.ndarray, synthetic: np.ndarray) -> dict:
    """The proxies above from encoded samples (all three are cut to the size of the smallest)."""
    from sklearn.metrics import roc_auc_score

    n = min(len(train), len(holdout), len(synthetic))
    train, holdout, synthetic = train[:n], holdout[:n], synthetic[:n]
    if n == 0 or len(synthetic) == 0:
        return {"dcr_train_median": None, "dcr_holdout_median": None, "share_closer_to_train": None,
                "membership_auc": None, "n_reference": n, "n_synthetic": len(synthetic)}
    to_train = nearest_distances(synthetic, train)
    to_holdout = nearest_distances(synthetic, holdout)
    share = float(np.mean(to_train < to_holdout) + 0.5 * np.mean(to_train == to_holdout))
    member_score = -nearest_distances(train, synthetic)
    non_member_score = -nearest_distances(holdout, synthetic)
    labels = np.r_[np.ones(n), np.zeros(n)]
    auc = float(roc_auc_score(labels, np.r_[member_score, non_member_score]))
    return {
        "dcr_train_median": float(np.median(to_train)),
        "dcr_holdout_median": float(np.median(to_holdout)),
        "dcr_train_p05": float(np.percentile(to_train, 5)),
        "dcr_holdout_p05": float(np.percentile(to_holdout, 5)),
        "share_exact_copies_of_train": float(np.mean(to_train == 0.0)),
        "share_closer_to_train": share,
        "membership_auc": auc,
        "n_reference": int(n),
        "n_synthetic": int(len(synthetic)),
        "_dcr_train": to_train,
        "_dcr_holdout": to_holdout,
    }
