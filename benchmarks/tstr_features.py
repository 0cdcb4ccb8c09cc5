"""Where a synthetic table misleads a classifier: TSTR on one feature, or on a feature pair, per file.

    python benchmarks/tstr_features.py --dataset mushroom SYN.csv [SYN2.csv ...]
    python benchmarks/tstr_features.py --dataset mushroom --with odor SYN.csv ...
    python benchmarks/tstr_features.py --dataset bank_marketing --without SYN.csv ...

Each synthetic file (a CSV file or Spark CSV folder the harness reads) is coded and encoded as
``../shared/bench/harness.py`` does for TSTR (the same train-row cap); the harness's XGBoost is
trained on the chosen features of the synthetic rows and scored (AUROC, binary classification
targets only) on the real test split, beside the same model trained on the real train split.
Modes: every feature alone (default); every feature beside ``--with F`` (a pair whose TSTR falls
below F's alone means the synthetic joint of the two misleads: mushroom at ε = 1 and 3, `odor` with
`spore-print-color`); every feature but one (``--without``). Prints one Markdown table; never asserts.
Needs ../shared.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_runs import SHARED  # noqa: E402

sys.path.insert(0, str(SHARED / "bench"))
import harness  # noqa: E402


def feature_spans(schema: harness.Schema) -> dict[str, np.ndarray]:
    """Each feature's columns in the harness's encoding (the target left out, as in TSTR)."""
    spans, offset = {}, 0
    for column in schema.columns:
        if column.name == schema.target:
            continue
        width = column.n_codes if column.kind == "cat" else 2
        spans[column.name] = np.arange(offset, offset + width)
        offset += width
    return spans


def encoded(coded: harness.Coded, schema: harness.Schema, cap: bool):
    """(X, y) as the harness's TSTR builds them (synthetic rows: capped as it caps them)."""
    if cap:
        coded = harness.take(coded, harness.subsample_idx(coded.n, harness.ML_MAX_TRAIN))
    X, y, _ = harness._xy(coded, schema)
    return np.asarray(X.todense()) if hasattr(X, "todense") else X, y


def auroc(train, test, columns) -> float:
    from sklearn.metrics import roc_auc_score

    (X, y), (X_test, y_test) = train, test
    if len(np.unique(y)) < 2:
        return 0.5
    model = harness._learners("classification")["xgb"]().fit(X[:, columns], y)
    return float(roc_auc_score(y_test == 1, model.predict_proba(X_test[:, columns])[:, 1]))


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--dataset", required=True, help="a shared dataset's name (or DIR/NAME)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--with", dest="base", help="pair every other feature with this one")
    mode.add_argument("--without", action="store_true", help="every feature but one")
    parser.add_argument("synthetic", nargs="+", help="synthetic tables (CSV file or folder)")
    args = parser.parse_args(argv)
    stem = Path(args.dataset) if "/" in args.dataset else SHARED / "data" / args.dataset
    schema = harness.Schema(f"{stem}.schema.json")
    if schema.task != "classification" or len(schema.by_name[schema.target].categories) != 2:
        parser.error(f"{schema.name}: AUROC needs a binary classification target")
    real = harness.RealData(f"{stem}.csv", schema)
    spans = feature_spans(schema)
    if args.base is not None and args.base not in spans:
        parser.error(f"--with {args.base!r}: not a feature of {schema.name} ({', '.join(spans)})")
    test, train = encoded(real.test, schema, cap=False), encoded(real.train, schema, cap=True)
    tables = [encoded(harness.code_table(harness.read_table(p), schema), schema, cap=True) for p in args.synthetic]
    every = np.arange(sum(len(s) for s in spans.values()))
    if args.without:
        rows = [("all", every)] + [(f"- {n}", np.setdiff1d(every, s)) for n, s in spans.items()]
    elif args.base is not None:
        rows = [(args.base, spans[args.base])] + [(f"{args.base} + {n}", np.concatenate([spans[args.base], s]))
                                                  for n, s in spans.items() if n != args.base]
    else:
        rows = list(spans.items())
    print(f"{schema.name}: XGBoost TSTR AUROC on the real test split ({len(real.test.codes[schema.target])} rows)\n")
    print("| features | real train | " + " | ".join(Path(p).name for p in args.synthetic) + " |")
    print("|---|---|" + "---|" * len(args.synthetic))
    for name, columns in rows:
        cells = [auroc(train, test, columns)] + [auroc(t, test, columns) for t in tables]
        print(f"| {name} | " + " | ".join(f"{c:.3f}" for c in cells) + " |", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
