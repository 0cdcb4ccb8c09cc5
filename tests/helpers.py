"""Test helpers: a tiny schema, and 1-way total-variation distance on public bins."""

from __future__ import annotations

import numpy as np
import pandas as pd

from spark_synth.schema import Column, ColumnType, Schema


def tiny_schema(nullable: bool = True) -> Schema:
    return Schema(
        columns=(
            Column("colour", ColumnType.CATEGORICAL, categories=("red", "green", "blue"), nullable=nullable),
            Column("size", ColumnType.ORDINAL, categories=(1, 2, 3), nullable=nullable),
            Column("age", ColumnType.INTEGER, min=0, max=9, nullable=nullable),
            Column("score", ColumnType.CONTINUOUS, min=0.0, max=1.0, bins=4, nullable=nullable),
        )
    )


def tiny_frame(n: int = 200, seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    colour = rng.choice(["red", "green", "blue"], n, p=[0.6, 0.3, 0.1]).astype(object)
    colour[rng.random(n) < 0.1] = None
    return pd.DataFrame(
        {
            "colour": colour,
            "size": pd.array(rng.choice([1, 2, 3], n), dtype="Int64"),
            "age": pd.array(rng.integers(0, 10, n), dtype="Int64"),
            "score": rng.random(n),
        }
    )


def one_way_tvd(real: pd.DataFrame, synthetic: pd.DataFrame, schema: Schema, bins: int = 16) -> dict[str, float]:
    """TVD of each column's distribution (nulls a category; numbers on `bins` equal-width public bins)."""
    out = {}
    for column in schema:
        if column.type.is_discrete and column.category_kind == "string":
            keys = lambda s: s.astype(object).where(s.notna(), "<null>").astype(str)  # noqa: E731
        elif column.type.is_discrete:  # numeric labels: 13, "13" and 13.0 are the same category

            def keys(s):
                return pd.to_numeric(s, errors="coerce").map(lambda v: "<null>" if pd.isna(v) else repr(float(v)))
        else:
            edges = np.linspace(column.min, column.max, bins + 1)

            def keys(s, edges=edges):
                x = pd.to_numeric(s, errors="coerce").to_numpy(dtype=float, na_value=np.nan)
                b = np.clip(np.searchsorted(edges, x, side="right") - 1, 0, bins - 1).astype(object)
                b[np.isnan(x)] = "<null>"
                return pd.Series(b).astype(str)

        p = keys(real[column.name]).value_counts(normalize=True)
        q = keys(synthetic[column.name]).value_counts(normalize=True)
        out[column.name] = 0.5 * float(p.sub(q, fill_value=0).abs().sum())
    return out


def exact_splice_measurements(engine, schema: Schema, frame: pd.DataFrame) -> list:
    """Exact (σ ≈ 0) answers to an engine's plan, in the pipeline's order: non-adaptive queries
    first, then the adaptive ones completed by the engine from those answers."""
    from spark_synth.measure import chebyshev_fixed_point_sums
    from spark_synth.privacy import NoisyMeasurement
    from spark_synth.queries import MarginalQuery, measurement_rounds
    from spark_synth.schema import OutOfDomainPolicy, encode_frame
    from spark_synth.schema.embedding import Embedding

    codes, _ = encode_frame(frame, schema, OutOfDomainPolicy.CLIP)
    first, adaptive = measurement_rounds(engine.plan(schema))
    out: list = []
    for q in first + adaptive:
        if q in adaptive:
            q = engine.adapt(schema, q, out)
        if isinstance(q, MarginalQuery):
            j = schema.names.index(q.columns[0])
            counts = np.bincount(codes[:, j], minlength=schema.columns[j].size).astype(float)
            out.append(NoisyMeasurement(q.name, q.columns, counts, sigma=1e-6, l2_sensitivity=1.0))
        else:
            x, _ = Embedding(schema, q.value_knots).embed(frame, OutOfDomainPolicy.CLIP)
            sums = chebyshev_fixed_point_sums(x, q) / 2.0**q.fraction_bits
            out.append(NoisyMeasurement(q.name, (), sums, sigma=1e-6, l2_sensitivity=q.l2_sensitivity))
    return out
