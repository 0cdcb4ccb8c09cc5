"""Test helpers: a tiny schema, a German-credit-like small table, and 1-way total-variation distance on public bins."""

from __future__ import annotations

import numpy as np
import pandas as pd

from spark_synth.schema import Column, ColumnType, Schema, schema_from_dict


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


def small_table(n: int, seed: int):
    """German-credit-like: 800 rows, 18 categorical columns without nulls, a 73-value month column
    (60 % on multiples of 6), a skewed 64-bin amount and a 57-value age (nullable by default, no nulls)."""
    rng = np.random.default_rng(seed)
    columns, data = [], {}
    for j in range(18):
        k = 3 + j % 4
        columns.append({"name": f"c{j}", "type": "categorical", "categories": [f"v{i}" for i in range(k)]})
        data[f"c{j}"] = np.array([f"v{i}" for i in rng.choice(k, n, p=np.arange(k, 0, -1) / np.arange(k, 0, -1).sum())])
    columns += [{"name": "months", "type": "integer", "min": 4, "max": 76}, {"name": "amount", "type": "continuous", "min": 0, "max": 20000},
                {"name": "age", "type": "integer", "min": 19, "max": 75}]
    spikes = rng.choice([6, 12, 18, 24, 36, 48, 60], n, p=[0.1, 0.3, 0.12, 0.25, 0.13, 0.07, 0.03])
    data["months"] = np.where(rng.random(n) < 0.6, spikes, rng.integers(4, 61, n))
    data["amount"] = np.clip(rng.lognormal(7.9, 0.7, n), 0, 20000)
    data["age"] = np.clip(19 + rng.gamma(3.0, 5.0, n), 19, 75).round().astype(int)
    return schema_from_dict({"columns": columns}), pd.DataFrame(data)


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


class ExactOracle:
    """Test double of the measurement oracle WITHOUT noise (σ ≈ 0): for recovery tests of engines
    (with exact statistics the fitted model must reproduce them). Never used outside tests."""

    def __new__(cls, frame: pd.DataFrame, schema: Schema, rho: float = 1.0):
        from spark_synth.engines.base import MeasurementOracle
        from spark_synth.measure import answer_frame
        from spark_synth.privacy import NoisyMeasurement

        class Exact(MeasurementOracle):
            rho_total = rho_remaining = float(rho)
            calls: list = []

            def _spend(self, rho):  # accounted like the real oracle, so budget-driven loops end
                if rho > self.rho_remaining * (1 + 1e-9):
                    raise AssertionError(f"ExactOracle: {rho} requested, {self.rho_remaining} left")
                self.rho_remaining = max(self.rho_remaining - rho, 0.0)

            def measure(self, query, rho):
                return self.measure_many([(query, rho)])[0]

            def measure_many(self, requests):
                requests = list(requests)
                self._spend(sum(r for _, r in requests))
                answers = answer_frame(frame, schema, [q for q, _ in requests])
                self.calls.extend(("measure", q.name, r) for q, r in requests)
                return [NoisyMeasurement(query=q, values=a / q.unit, sigma=1e-6, rho=r) for (q, r), a in zip(requests, answers)]

            def prepare(self, queries):
                pass

            def select(self, candidates, score_kind, model_answers, rho, *, weights=None, offsets=None):
                answers = answer_frame(frame, schema, list(candidates))
                errors = [np.abs(a / q.unit - m).sum() for q, a, m in zip(candidates, answers, model_answers)]
                self._spend(rho)
                self.calls.append(("select", score_kind, rho))
                return candidates[int(np.argmax(errors))]

            def child(self, rho, label, columns=None):
                if columns is None:
                    return ExactOracle(frame, schema, rho)
                return ExactOracle(frame, Schema(tuple(c for c in schema.columns if c.name in columns), name=schema.name), rho)

        return Exact()


def exact_splice_measurements(engine, schema: Schema, frame: pd.DataFrame) -> list:
    """Exact (σ ≈ 0) answers to what the SPLICE engine measures, in its order (1-way histograms,
    then the moment query encoded from them)."""
    return engine.measure(schema, ExactOracle(frame, schema))


def exact_fit(engine, schema: Schema, frame: pd.DataFrame):
    """``engine.fit`` through the noise-free :class:`ExactOracle`, tasks run in-process."""
    from spark_synth.engines import LocalTaskRunner

    return engine.fit(schema, ExactOracle(frame, schema), LocalTaskRunner())


def error_line(err: str) -> str:
    """The CLI's stderr on failure: progress lines (``spark-synth: ...``), then ONE error line, last; returns it."""
    lines = err.strip().splitlines()
    assert lines, "stderr is empty"
    *progress, line = lines
    assert line.startswith("spark-synth: error: "), f"the last stderr line is not the error: {err!r}"
    assert all(p.startswith("spark-synth: ") and not p.startswith("spark-synth: error") for p in progress), err
    return line
