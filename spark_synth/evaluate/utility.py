"""Utility: train on synthetic, test on real hold-out (TSTR), against train-on-real (TRTR) as the ceiling.

Features are the public encoding of every column but the target
(:class:`~spark_synth.evaluate.encoding.PublicEncoder`); the target is coded on its public categories
(classification) or used as a number (regression). Rows with a missing target are left out.
Learners: logistic regression (classification) or ridge regression (regression), a random forest,
and gradient boosting (XGBoost). Scores: AUROC (one-vs-rest macro for more than two classes),
macro-F1 and accuracy for classification; R² for regression. The hold-out rows are only ever used
to score; models fit on the synthetic sample (TSTR) or the real *train* sample (TRTR) only.

Baselines: TRTR is the ceiling; the *independent reference* is the floor — the same learners fit on
the real train sample with every column shuffled on its own (a draw from the product of its
marginals: what the ``independent`` engine would give with no noise; the target is then unrelated to
the features). It reads real rows (evaluation does anyway: not private) and spends no budget.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..errors import ParameterError
from ..schema import ColumnType, OutOfDomainPolicy, Schema
from ..schema.encoding import column_numbers, encode_column
from .encoding import PublicEncoder

CLASSIFICATION_METRICS = ("auroc", "macro_f1", "accuracy")
REGRESSION_METRICS = ("r2",)


def infer_task(schema: Schema, target: str) -> str:
    column = schema[target]
    if schema.task in ("classification", "regression") and schema.target == target:
        return schema.task
    return "classification" if column.type.is_discrete else "regression"


def check_target(schema: Schema, target: str | None) -> str:
    target = target if target is not None else schema.target
    if target is None:
        raise ParameterError("target", "a column name (pass --target, or set 'target' in the schema)", None)
    if target not in schema.names:
        raise ParameterError("target", f"one of the schema's columns {list(schema.names)}", target)
    if len(schema) < 2:
        raise ParameterError("target", "a column of a schema with at least one other column", target)
    return target


def _learners(task: str, seed: int) -> dict:
    from sklearn.ensemble import RandomForestClassifier, RandomForestRegressor
    from sklearn.linear_model import LogisticRegression, Ridge
    from xgboost import XGBClassifier, XGBRegressor

    if task == "classification":
        return {
            "logistic_regression": lambda: LogisticRegression(max_iter=2000, C=1.0),
            "random_forest": lambda: RandomForestClassifier(n_estimators=100, min_samples_leaf=2, n_jobs=2, random_state=seed),
            "xgboost": lambda: XGBClassifier(n_estimators=200, max_depth=6, learning_rate=0.1, tree_method="hist",
                                             n_jobs=2, random_state=seed, verbosity=0),
        }
    return {
        "ridge": lambda: Ridge(alpha=1.0),
        "random_forest": lambda: RandomForestRegressor(n_estimators=100, min_samples_leaf=2, n_jobs=2, random_state=seed),
        "xgboost": lambda: XGBRegressor(n_estimators=200, max_depth=6, learning_rate=0.1, tree_method="hist",
                                        n_jobs=2, random_state=seed, verbosity=0),
    }


def prepare(frame: pd.DataFrame, schema: Schema, target: str, task: str) -> tuple[np.ndarray, np.ndarray]:
    """(features, labels) with rows of missing target removed."""
    features = [c for c in schema.names if c != target]
    column = schema[target]
    if task == "classification":
        if column.type.is_discrete:
            codes, _ = encode_column(frame[target], column, OutOfDomainPolicy.CLIP)
            keep = codes != (column.null_code if column.nullable else -1)
        else:  # numeric target used as classes: its public bins
            codes, _ = encode_column(frame[target], column, OutOfDomainPolicy.CLIP)
            keep = codes != (column.null_code if column.nullable else -1)
        y = codes[keep]
    else:
        if column.type.is_discrete and column.category_kind in ("string", "boolean"):
            raise ParameterError("target", "a numeric column for regression", target)
        y_all = column_numbers(frame[target], column) if column.type.is_temporal else \
            pd.to_numeric(frame[target], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
        if column.type.model_type in (ColumnType.INTEGER, ColumnType.CONTINUOUS):
            y_all = np.clip(y_all, column.min, column.max)
        keep = ~np.isnan(y_all)
        y = y_all[keep]
    x = PublicEncoder(schema, features).transform(frame.loc[keep])
    return x, y


class _ClassProbabilities:
    """Fits on whatever classes the training labels hold; predicts probabilities over all classes."""

    def __init__(self, make, n_classes: int):
        self.make, self.n_classes = make, n_classes

    def fit(self, x, y):
        self.present_ = np.unique(y)
        if len(self.present_) < 2:
            self.model_ = None
            return self
        remap = np.searchsorted(self.present_, y)
        self.model_ = self.make().fit(x, remap)
        return self

    def predict_proba(self, x) -> np.ndarray:
        out = np.zeros((len(x), self.n_classes))
        if self.model_ is None:
            out[:, self.present_[0]] = 1.0
        else:
            out[:, self.present_] = self.model_.predict_proba(x)
        return out


def _classification_scores(y_true: np.ndarray, proba: np.ndarray) -> dict:
    from sklearn.metrics import accuracy_score, f1_score, roc_auc_score

    predicted = proba.argmax(axis=1)
    classes = np.unique(y_true)
    scores = {"accuracy": float(accuracy_score(y_true, predicted)),
              "macro_f1": float(f1_score(y_true, predicted, labels=classes, average="macro", zero_division=0))}
    if len(classes) < 2:
        scores["auroc"] = None
    elif len(classes) == 2:
        scores["auroc"] = float(roc_auc_score(y_true == classes[1], proba[:, classes[1]]))
    else:
        sub = proba[:, classes]
        sums = sub.sum(axis=1, keepdims=True)
        sub = np.where(sums > 0, sub / np.where(sums > 0, sums, 1.0), 1.0 / len(classes))
        scores["auroc"] = float(roc_auc_score(y_true, sub, multi_class="ovr", average="macro", labels=classes))
    return scores


def _score(task: str, make, n_classes: int, train: tuple, test: tuple) -> dict:
    x_train, y_train = train
    x_test, y_test = test
    if len(y_train) == 0:
        return {m: None for m in (CLASSIFICATION_METRICS if task == "classification" else REGRESSION_METRICS)}
    if task == "classification":
        model = _ClassProbabilities(make, n_classes).fit(x_train, y_train)
        return _classification_scores(y_test, model.predict_proba(x_test))
    from sklearn.metrics import r2_score

    model = make().fit(x_train, y_train)
    return {"r2": float(r2_score(y_test, model.predict(x_test)))}


def independent_sample(frame: pd.DataFrame, seed: int = 0) -> pd.DataFrame:
    """``frame`` with every column permuted on its own (a sample of the product of its marginals)."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 13]))
    return pd.DataFrame({c: frame[c].to_numpy()[rng.permutation(len(frame))] for c in frame.columns}, index=frame.index)


def utility(real_train: pd.DataFrame, real_holdout: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema,
            target: str, seed: int = 0, task: str | None = None, independent: bool = True) -> dict:
    """TSTR and TRTR scores of every learner, and the best of each (see module docstring); with
    ``independent``, also the independent reference's (key ``independent``)."""
    target = check_target(schema, target)
    task = task or infer_task(schema, target)
    if task not in ("classification", "regression"):
        raise ParameterError("task", "'classification' or 'regression'", task)
    test = prepare(real_holdout, schema, target, task)
    if len(test[1]) == 0:
        raise ParameterError("holdout", "a real hold-out part with at least one non-null target", 0)
    train_real = prepare(real_train, schema, target, task)
    train_synth = prepare(synthetic, schema, target, task)
    kinds = {"tstr": train_synth, "trtr": train_real}
    if independent:
        kinds["independent"] = prepare(independent_sample(real_train, seed), schema, target, task)
    n_classes = schema[target].n_values
    metrics = CLASSIFICATION_METRICS if task == "classification" else REGRESSION_METRICS
    primary = metrics[0]
    learners = {}
    for name, make in _learners(task, seed).items():
        learners[name] = {kind: _score(task, make, n_classes, data, test) for kind, data in kinds.items()}
    best = {}
    for kind in kinds:
        best[kind] = {}
        for metric in metrics:
            values = {n: s[kind][metric] for n, s in learners.items() if s[kind][metric] is not None}
            if values:
                winner = max(values, key=values.get)
                best[kind][metric] = values[winner]
                if metric == primary:
                    best[kind]["learner"] = winner
            else:
                best[kind][metric] = None
    return {"task": task, "target": target, "primary_metric": primary, "learners": learners, "best": best,
            "rows": {"synthetic_train": int(len(train_synth[1])), "real_train": int(len(train_real[1])),
                     "real_holdout_test": int(len(test[1]))}}
