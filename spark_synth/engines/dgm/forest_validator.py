"""The DGM paper's validator (``validator=real``, an opt-in): a random forest told real rows from
shuffled ones. It trains on real rows, so the output is NOT covered by the DP guarantee; the oracle
records the row access and the report, the run's JSON line and MLflow say so.

As in the reference code: 100 trees of depth 5, isotonic calibration; "shuffled" rows join each
partition's columns from an independently permuted copy of the rows (what a random join of perfect
partition models gives). The score is the calibrated log-odds log p/(1 − p), the classifier's
estimate of log p_real/p_join, so the resampling and ratio joins use it as they use the DP one.
"""

from __future__ import annotations

import base64
import pickle

import numpy as np

#: Real rows the forest trains on (as many shuffled ones beside them).
REAL_ROWS = 20_000
TREES, DEPTH = 100, 5
#: Calibrated probabilities are kept inside [ε, 1 − ε] so log-odds stay finite.
EPSILON = 1e-4


class ForestValidator:
    """A calibrated random forest over code rows (schema order)."""

    def __init__(self, classifier):
        self.classifier = classifier

    @classmethod
    def fit(cls, real: np.ndarray, partitions, seed: int = 0) -> "ForestValidator":
        from sklearn.calibration import CalibratedClassifierCV
        from sklearn.ensemble import RandomForestClassifier

        rng = np.random.default_rng(seed)
        shuffled = real.copy()
        for columns in partitions:
            shuffled[:, list(columns)] = real[rng.permutation(len(real))][:, list(columns)]
        features = np.vstack([real, shuffled])
        labels = np.concatenate([np.ones(len(real), dtype=np.int64), np.zeros(len(shuffled), dtype=np.int64)])
        forest = RandomForestClassifier(n_estimators=TREES, max_depth=DEPTH, random_state=seed, n_jobs=1)
        classifier = CalibratedClassifierCV(forest, method="isotonic", cv=3).fit(features, labels)
        return cls(classifier)

    def score(self, codes: np.ndarray) -> np.ndarray:
        p = np.clip(self.classifier.predict_proba(codes)[:, 1], EPSILON, 1.0 - EPSILON)
        return np.log(p) - np.log1p(-p)

    def to_state(self) -> dict:
        return {"kind": "forest", "pickle": base64.b64encode(pickle.dumps(self.classifier)).decode("ascii")}

    @classmethod
    def from_state(cls, state: dict) -> "ForestValidator":
        return cls(pickle.loads(base64.b64decode(state["pickle"])))
