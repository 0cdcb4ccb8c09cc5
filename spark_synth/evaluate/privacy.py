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

And the two measures the DGM paper reports (as SynthEval defines them), so DGM runs can be set
beside it:

* ``identification_risk`` (ε-identifiability, Yoon et al. 2020): the share of train rows whose
  nearest synthetic row is strictly closer than their nearest *other* train row, with each column's
  coordinates weighted by 1 / (entropy of its values in the train sample). 0 for a synthesizer far
  from every row; near 1 for a copy of the train table;
* ``identification_risk_holdout``: the same measure with the real hold-out rows in place of the
  synthetic ones — what rows the synthesizer never saw score (about 0.5 for continuous data: a
  fresh row is as likely as another train row to be a train row's nearest neighbour; lower where
  ties are common). A synthetic table above it is closer to its train rows than fresh real data is;
* ``identification_risk_independent``: the same with the *independent reference* — the train rows
  with each column shuffled on its own (a draw from the product of the train part's marginals, what
  the ``independent`` engine would give with no noise). Computed from real rows: not private;
  ``membership_auc_independent`` is the distance attack's AUC against that reference;
* ``mia_recall`` / ``mia_precision``: a classifier attack. A random forest learns to tell synthetic
  rows from half of the hold-out rows; it then labels train rows (members) and the other half of
  the hold-out (non-members) as "synthetic-like" (= member) or not. Recall is the share of members
  it flags, precision the share of flagged rows that are members — precision 0.5 is no better than
  guessing.
"""

from __future__ import annotations

import numpy as np


def nearest_distances(queries: np.ndarray, reference: np.ndarray, chunk: int = 2048,
                      exclude_self: bool = False) -> np.ndarray:
    """Euclidean distance from each query row to its nearest reference row (exact, chunked).
    ``exclude_self`` (``queries`` is ``reference``): to the nearest OTHER row (a duplicate still counts)."""
    if len(reference) <= int(exclude_self):
        return np.full(len(queries), np.inf)
    ref_sq = (reference * reference).sum(axis=1)
    out = np.empty(len(queries))
    for start in range(0, len(queries), chunk):
        q = queries[start:start + chunk]
        d = (q * q).sum(axis=1)[:, None] + ref_sq[None, :] - 2.0 * q @ reference.T
        if exclude_self:
            d[np.arange(len(q)), np.arange(start, start + len(q))] = np.inf
        out[start:start + chunk] = np.sqrt(np.maximum(d.min(axis=1), 0.0))
    # Exact zero for exact copies (the expansion above leaves round-off of ~1e-8).
    out[out < 1e-6] = 0.0
    return out


def nearest_other_distances(points: np.ndarray, chunk: int = 2048) -> np.ndarray:
    """Euclidean distance from each row to its nearest OTHER row of the same array (exact, chunked)."""
    return nearest_distances(points, points, chunk, exclude_self=True)


def entropy_weights(train: np.ndarray, slices: dict[str, slice] | None) -> np.ndarray:
    """Per-coordinate weights 1 / H(column), H the entropy (nats) of the column's encoded values in
    ``train`` (a constant column, H = 0, keeps weight 1). Without ``slices`` every coordinate is a column."""
    weights = np.ones(train.shape[1])
    groups = slices.values() if slices else [slice(j, j + 1) for j in range(train.shape[1])]
    for cols in groups:
        _, counts = np.unique(np.round(train[:, cols], 6), axis=0, return_counts=True)
        p = counts / counts.sum()
        entropy = float(-(p * np.log(p)).sum())
        if entropy > 0:
            weights[cols] = 1.0 / entropy
    return weights


def identification_risk(train: np.ndarray, synthetic: np.ndarray, slices: dict[str, slice] | None = None) -> float:
    """ε-identifiability (see the module docstring) of ``synthetic`` against ``train``."""
    w = entropy_weights(train, slices)
    weighted = train * w
    return float(np.mean(nearest_distances(weighted, synthetic * w) < nearest_other_distances(weighted)))


def independent_reference(train: np.ndarray, slices: dict[str, slice] | None = None, seed: int = 0) -> np.ndarray:
    """The train rows with each column (its ``slices`` coordinates together) permuted on its own:
    a sample of the product of the train part's 1-way marginals."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 11]))
    out = train.copy()
    groups = slices.values() if slices else [slice(j, j + 1) for j in range(train.shape[1])]
    for cols in groups:
        out[:, cols] = train[rng.permutation(len(train)), cols]
    return out


def classifier_attack(train: np.ndarray, holdout: np.ndarray, synthetic: np.ndarray, seed: int = 0) -> dict:
    """``mia_recall`` and ``mia_precision`` of the classifier attack (module docstring); equal-sized
    classes throughout (the smallest of |synthetic|, |holdout|/2 and |train|)."""
    from sklearn.ensemble import RandomForestClassifier

    half = len(holdout) // 2
    n = min(len(synthetic), half, len(train))
    if n < 10:
        return {"mia_recall": None, "mia_precision": None}
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(holdout))
    fit_holdout, test_holdout = holdout[order[:n]], holdout[order[half:half + n]]
    attack = RandomForestClassifier(n_estimators=100, random_state=seed, n_jobs=1)
    attack.fit(np.r_[synthetic[rng.permutation(len(synthetic))[:n]], fit_holdout], np.r_[np.ones(n), np.zeros(n)])
    flagged_members = attack.predict(train[rng.permutation(len(train))[:n]]).astype(bool)
    flagged_others = attack.predict(test_holdout).astype(bool)
    flagged = flagged_members.sum() + flagged_others.sum()
    return {"mia_recall": float(flagged_members.mean()),
            "mia_precision": float(flagged_members.sum() / flagged) if flagged else None}


def privacy_proxies(train: np.ndarray, holdout: np.ndarray, synthetic: np.ndarray,
                    slices: dict[str, slice] | None = None, seed: int = 0) -> dict:
    """The proxies above from encoded samples (all three are cut to the size of the smallest;
    ``slices``: each column's coordinates, for the identification risk's column weights)."""
    from sklearn.metrics import roc_auc_score

    n = min(len(train), len(holdout), len(synthetic))
    train, holdout, synthetic = train[:n], holdout[:n], synthetic[:n]
    if n == 0 or len(synthetic) == 0:
        return {"dcr_train_median": None, "dcr_holdout_median": None, "share_closer_to_train": None,
                "membership_auc": None, "membership_auc_independent": None, "identification_risk": None,
                "identification_risk_holdout": None,
                "identification_risk_independent": None, "mia_recall": None, "mia_precision": None,
                "n_reference": n, "n_synthetic": len(synthetic)}
    to_train = nearest_distances(synthetic, train)
    to_holdout = nearest_distances(synthetic, holdout)
    share = float(np.mean(to_train < to_holdout) + 0.5 * np.mean(to_train == to_holdout))
    member_score = -nearest_distances(train, synthetic)
    non_member_score = -nearest_distances(holdout, synthetic)
    labels = np.r_[np.ones(n), np.zeros(n)]
    auc = float(roc_auc_score(labels, np.r_[member_score, non_member_score]))
    independent = independent_reference(train, slices, seed)
    auc_independent = float(roc_auc_score(labels, np.r_[-nearest_distances(train, independent),
                                                        -nearest_distances(holdout, independent)]))
    return {
        "dcr_train_median": float(np.median(to_train)),
        "dcr_holdout_median": float(np.median(to_holdout)),
        "dcr_train_p05": float(np.percentile(to_train, 5)),
        "dcr_holdout_p05": float(np.percentile(to_holdout, 5)),
        "share_exact_copies_of_train": float(np.mean(to_train == 0.0)),
        "share_closer_to_train": share,
        "membership_auc": auc,
        "membership_auc_independent": auc_independent,
        "identification_risk": identification_risk(train, synthetic, slices),
        "identification_risk_holdout": identification_risk(train, holdout, slices),
        "identification_risk_independent": identification_risk(train, independent, slices),
        **classifier_attack(train, holdout, synthetic, seed),
        "n_reference": int(n),
        "n_synthetic": int(len(synthetic)),
        "_dcr_train": to_train,
        "_dcr_holdout": to_holdout,
    }
