"""SPLICE vs the `independent` engine: quality and time on shared datasets (prints tables).

    python benchmarks/splice_quality.py --datasets adult california_housing --epsilon 1 \
        [--set n_dense=64 numeric_model=gaussian ...] [--seeds 0]

Protocol: deterministic 80/20 train/hold-out split (seed 0); each engine is fitted on the train
split only and samples as many rows as the train split has. Metrics (numbers on 16 equal-width
public bins, nulls a category): mean 1-/2-way TVD vs the train split, sliced W1 over 200 random
directions of the public embedding, and TSTR with a histogram gradient-boosting model scored on the
hold-out split (AUROC for classification, R² for regression). A quick harness for choosing defaults;
the full evaluation lives in spark_synth.evaluate.
"""

from __future__ import annotations

import argparse
import itertools
import time
from pathlib import Path

import numpy as np
import pandas as pd

from spark_synth import Synthesizer, get_spark, load_schema
from spark_synth.schema import Column, ColumnType, OutOfDomainPolicy, Schema, encode_frame
from spark_synth.schema.embedding import Embedding

ROOT = Path(__file__).resolve().parents[1]


def split(frame: pd.DataFrame, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    order = np.random.default_rng(seed).permutation(len(frame))
    cut = int(0.8 * len(frame))
    return frame.iloc[order[:cut]].reset_index(drop=True), frame.iloc[order[cut:]].reset_index(drop=True)


def eval_schema(schema: Schema) -> Schema:
    cols = []
    for c in schema:
        if c.type.is_discrete:
            cols.append(c)
        else:
            cols.append(Column(c.name, ColumnType.CONTINUOUS, min=float(c.min), max=float(c.max), bins=16, nullable=c.nullable))
    return Schema(columns=tuple(cols))


def tvd(real_codes, syn_codes, sizes, k):
    out = []
    for cols in itertools.combinations(range(len(sizes)), k):
        shape = tuple(sizes[c] for c in cols)
        p = np.bincount(np.ravel_multi_index(tuple(real_codes[:, cols].T), shape), minlength=int(np.prod(shape)))
        q = np.bincount(np.ravel_multi_index(tuple(syn_codes[:, cols].T), shape), minlength=int(np.prod(shape)))
        out.append(0.5 * np.abs(p / p.sum() - q / q.sum()).sum())
    return float(np.mean(out))


def sliced_w1(real_x, syn_x, n_dirs=200, seed=0):
    rng = np.random.default_rng(seed)
    dirs = rng.standard_normal((n_dirs, real_x.shape[1]))
    dirs /= np.linalg.norm(dirs, axis=1, keepdims=True)
    qs = np.linspace(0.0025, 0.9975, 400)
    a = np.quantile(real_x @ dirs.T, qs, axis=0)
    b = np.quantile(syn_x @ dirs.T, qs, axis=0)
    return float(np.abs(a - b).mean())


def tstr(train_x, train_y, test_x, test_y, task):
    from sklearn.ensemble import HistGradientBoostingClassifier, HistGradientBoostingRegressor
    from sklearn.metrics import r2_score, roc_auc_score

    if task == "regression":
        model = HistGradientBoostingRegressor(random_state=0).fit(train_x, train_y)
        return float(r2_score(test_y, model.predict(test_x)))
    if len(np.unique(train_y)) < 2:
        return 0.5
    model = HistGradientBoostingClassifier(random_state=0).fit(train_x, train_y)
    positive = np.unique(test_y)[-1]
    proba = model.predict_proba(test_x)
    column = list(model.classes_).index(positive) if positive in model.classes_ else None
    return float(roc_auc_score(test_y == positive, proba[:, column])) if column is not None else 0.5


def features(frame, schema, target):
    embedding = Embedding(Schema(columns=tuple(c for c in schema if c.name != target)))
    x, _ = embedding.embed(frame[[c.name for c in schema if c.name != target]], OutOfDomainPolicy.CLIP)
    return x


def metrics(real: pd.DataFrame, syn: pd.DataFrame, holdout: pd.DataFrame, schema: Schema) -> dict:
    es = eval_schema(schema)
    rc, _ = encode_frame(real, es, OutOfDomainPolicy.CLIP)
    sc, _ = encode_frame(syn, es, OutOfDomainPolicy.CLIP)
    sizes = [c.size for c in es]
    emb = Embedding(schema)
    rx, _ = emb.embed(real, OutOfDomainPolicy.CLIP)
    sx, _ = emb.embed(syn, OutOfDomainPolicy.CLIP)
    target, task = schema.target, schema.task
    if task == "regression":
        ty = lambda f: pd.to_numeric(f[target], errors="coerce").fillna(schema[target].min).to_numpy()  # noqa: E731
    else:
        ty = lambda f: f[target].astype(str).to_numpy()  # noqa: E731
    return {
        "tvd1": tvd(rc, sc, sizes, 1),
        "tvd2": tvd(rc, sc, sizes, 2),
        "sw1": sliced_w1(rx, sx),
        "tstr": tstr(features(syn, schema, target), ty(syn), features(holdout, schema, target), ty(holdout), task),
    }


def parse_option(value: str):
    """A --set value: true/false, whole number, number, or text (e.g. numeric_model=gaussian)."""
    if value.lower() in ("true", "false"):
        return value.lower() == "true"
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default=str(ROOT.parent / "shared" / "data"))
    parser.add_argument("--datasets", nargs="+", default=["adult", "california_housing"])
    parser.add_argument("--engines", nargs="+", default=["independent", "splice"])
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--seeds", type=int, nargs="+", default=[0])
    parser.add_argument("--set", nargs="*", default=[], help="splice options, e.g. n_sparse=128 components=8")
    args = parser.parse_args()
    options = {}
    for item in args.set:
        key, value = item.split("=", 1)
        options[key] = parse_option(value)
    spark = get_spark(extra_conf={"spark.master": "local[2]", "spark.sql.shuffle.partitions": "4"})
    print(f"epsilon={args.epsilon} delta={args.delta} splice options={options or 'defaults'}")
    print("| dataset | engine | seed | 1-way TVD | 2-way TVD | sliced W1 | TSTR | fit s |")
    print("|---|---|---|---|---|---|---|---|")
    for name in args.datasets:
        schema = load_schema(Path(args.data) / f"{name}.schema.json")
        frame = pd.read_csv(Path(args.data) / f"{name}.csv", dtype=str, keep_default_na=False, na_values=[""])
        train, holdout = split(frame)
        train_df = spark.createDataFrame(train.astype(object).where(train.notna(), None), schema=", ".join(f"`{c}` string" for c in train.columns))
        train_df = train_df.cache()
        train_df.count()
        real_ceiling = metrics(train, train, holdout, schema)["tstr"]
        print(f"| {name} | (real train) | - | 0 | 0 | 0 | {real_ceiling:.3f} | - |")
        for engine in args.engines:
            for seed in args.seeds:
                opts = {**options, "fit_seed": seed, "direction_seed": seed} if engine == "splice" else {}
                started = time.perf_counter()
                synth = Synthesizer(engine, epsilon=args.epsilon, delta=args.delta, engine_options=opts).fit(train_df, schema)
                fit_seconds = time.perf_counter() - started
                syn = synth.sample(len(train), seed=seed, spark=spark).toPandas()
                m = metrics(train, syn, holdout, schema)
                print(f"| {name} | {engine} | {seed} | {m['tvd1']:.4f} | {m['tvd2']:.4f} | {m['sw1']:.4f} | {m['tstr']:.3f} | {fit_seconds:.1f} |", flush=True)
        train_df.unpersist()


if __name__ == "__main__":
    main()
