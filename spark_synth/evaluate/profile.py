"""One distributed pass per table for the statistics that are not marginal counts.

Each partition encodes its rows on the public domain and accumulates, in small fixed-size arrays:

* pairwise moments of numeric columns (over rows where both are present): n, Σx, Σy, Σx², Σy², Σxy;
* per-category moments of each numeric column for each categorical column: n, Σx, Σx²;
* histograms of the rows' projections on ``K`` seeded random directions of the public encoding
  (:class:`~spark_synth.evaluate.encoding.PublicEncoder`), on a fixed public grid.

Each partition returns one small blob; the driver sums them. Driver memory is
O(partitions × (K × bins + numeric² + categories × numeric)), independent of the number of rows.
"""

from __future__ import annotations

import pickle
from dataclasses import dataclass
from typing import Iterator

import numpy as np
import pandas as pd

from ..schema import OutOfDomainPolicy, Schema
from ..schema.encoding import column_numbers, encode_column
from .encoding import PublicEncoder

DEFAULT_PROJECTIONS = 64
DEFAULT_PROJECTION_BINS = 1024


@dataclass(frozen=True)
class ProfilePlan:
    """What the pass computes; built from the schema and a seed only (public)."""

    schema: Schema
    directions: np.ndarray  # (width, K) unit vectors
    lower: np.ndarray  # (K,) public lower bound of each projection
    upper: np.ndarray  # (K,) public upper bound
    bins: int

    @property
    def numeric(self) -> list[str]:
        return [c.name for c in self.schema if not c.type.is_discrete]

    @property
    def categorical(self) -> list[str]:
        return [c.name for c in self.schema if c.type.is_discrete]


def make_plan(schema: Schema, projections: int = DEFAULT_PROJECTIONS, bins: int = DEFAULT_PROJECTION_BINS, seed: int = 0) -> ProfilePlan:
    encoder = PublicEncoder(schema)
    rng = np.random.default_rng(np.random.SeedSequence([seed, 7]))
    theta = rng.standard_normal((encoder.width, projections))
    theta /= np.linalg.norm(theta, axis=0, keepdims=True)
    _, top = encoder.bounds()
    # Every coordinate lies in [0, top]: the projection lies in [Σ top·min(θ,0), Σ top·max(θ,0)].
    lower = (top[:, None] * np.minimum(theta, 0.0)).sum(axis=0)
    upper = (top[:, None] * np.maximum(theta, 0.0)).sum(axis=0)
    return ProfilePlan(schema=schema, directions=theta, lower=lower, upper=upper, bins=int(bins))


@dataclass
class TableStats:
    """What the pass accumulates over a table's rows (all sums: two tables' stats add up).

    ``pair``: (6, p, p) n, Σx, Σy, Σx², Σy², Σxy over rows where numeric columns i and j are both
    present; ``by_category[c]``: (3, p, size of c) n, Σx, Σx² of each numeric column per code of
    categorical column c; ``projections``: (K, bins) histograms of the projections."""

    rows: int
    pair: np.ndarray
    by_category: dict[str, np.ndarray]
    projections: np.ndarray

    def __add__(self, other: "TableStats") -> "TableStats":
        return TableStats(self.rows + other.rows, self.pair + other.pair,
                          {c: block + other.by_category[c] for c, block in self.by_category.items()},
                          self.projections + other.projections)


def empty_stats(plan: ProfilePlan) -> TableStats:
    p = len(plan.numeric)
    return TableStats(0, np.zeros((6, p, p)), {c: np.zeros((3, p, plan.schema[c].size)) for c in plan.categorical},
                      np.zeros((plan.directions.shape[1], plan.bins)))


def partial_stats(frame: pd.DataFrame, plan: ProfilePlan) -> TableStats:
    """The statistics of one batch of rows (pure numpy; also used directly on pandas frames)."""
    stats = empty_stats(plan)
    n = len(frame)
    if n == 0:
        return stats
    stats.rows = n
    schema = plan.schema
    if plan.numeric:
        x = np.column_stack([column_numbers(frame[c], schema[c]) if schema[c].type.is_temporal else
                             pd.to_numeric(frame[c], errors="coerce").to_numpy(dtype=np.float64, na_value=np.nan)
                             for c in plan.numeric])
        for j, c in enumerate(plan.numeric):  # clip policy, as everywhere else in evaluation
            x[:, j] = np.where(np.isnan(x[:, j]), np.nan, np.clip(x[:, j], schema[c].min, schema[c].max))
        m = (~np.isnan(x)).astype(np.float64)
        x0 = np.nan_to_num(x, nan=0.0)
        stats.pair = np.stack([m.T @ m, x0.T @ m, m.T @ x0, (x0 * x0).T @ m, m.T @ (x0 * x0), x0.T @ x0])
        for c in plan.categorical:
            column = schema[c]
            codes, _ = encode_column(frame[c], column, OutOfDomainPolicy.CLIP)
            block = np.zeros((3, len(plan.numeric), column.size))
            for j in range(len(plan.numeric)):
                block[0, j] = np.bincount(codes, weights=m[:, j], minlength=column.size)
                block[1, j] = np.bincount(codes, weights=x0[:, j], minlength=column.size)
                block[2, j] = np.bincount(codes, weights=x0[:, j] ** 2, minlength=column.size)
            stats.by_category[c] = block
    points = PublicEncoder(schema).transform(frame) @ plan.directions  # (n, K)
    width = (plan.upper - plan.lower)
    index = np.clip(((points - plan.lower) / width * plan.bins).astype(np.int64), 0, plan.bins - 1)
    k = plan.directions.shape[1]
    flat = index + np.arange(k)[None, :] * plan.bins
    stats.projections = np.bincount(flat.ravel(), minlength=k * plan.bins).reshape(k, plan.bins).astype(np.float64)
    return stats


def table_stats(df, plan: ProfilePlan) -> TableStats:
    """Run the pass over a Spark DataFrame and return the merged statistics."""
    names = list(plan.schema.names)

    def per_partition(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        total = empty_stats(plan)
        for batch in batches:
            total = total + partial_stats(batch, plan)
        yield pd.DataFrame({"blob": [pickle.dumps(total)]})

    blobs = df.select(*[f"`{c}`" for c in names]).mapInPandas(per_partition, "blob binary").collect()
    total = empty_stats(plan)
    for row in blobs:
        total = total + pickle.loads(row["blob"])
    return total
