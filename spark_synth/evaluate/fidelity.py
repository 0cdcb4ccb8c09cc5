"""Marginal fidelity: total-variation distance (TVD) of 1-, 2- and 3-way marginals.

Marginals are counted with the measure layer's distributed histogram pass
(:func:`spark_synth.measure.count_marginals`, one pass per table over every column set), so only
small dense arrays over the public domain reach the driver, whatever the table's size. Numeric
columns are compared on public bins (the schema's bins, coarsened to at most ``numeric_bins``
equal-width bins so that 2- and 3-way cells are not dominated by sampling noise); nulls are a value
like any other. All pairs are compared; triples too, or a seeded sample of ``max_triples`` of them.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from ..errors import ParameterError
from ..measure import count_marginals
from ..schema import OutOfDomainPolicy, Schema

DEFAULT_NUMERIC_BINS = 32
DEFAULT_MAX_TRIPLES = 100
#: Column sets with more cells than this are left out (reported as ``n_skipped``).
MAX_EVAL_CELLS = 1 << 20


def evaluation_schema(schema: Schema, numeric_bins: int | None = DEFAULT_NUMERIC_BINS) -> Schema:
    """The schema with numeric columns on at most ``numeric_bins`` public bins (None: as declared)."""
    if numeric_bins is None:
        return schema
    if isinstance(numeric_bins, bool) or not isinstance(numeric_bins, int) or numeric_bins < 2:
        raise ParameterError("numeric_bins", "a whole number >= 2 (or None for the schema's bins)", numeric_bins)
    columns = []
    for column in schema:
        if not column.type.is_discrete and column.n_values > numeric_bins:
            column = replace(column, bins=numeric_bins)
        columns.append(column)
    return replace(schema, columns=tuple(columns))


def column_sets(schema: Schema, max_triples: int = DEFAULT_MAX_TRIPLES, seed: int = 0) -> dict[int, list[tuple[str, ...]]]:
    """All singles and pairs; all triples, or a seeded sample of ``max_triples`` of them."""
    if isinstance(max_triples, bool) or not isinstance(max_triples, int) or max_triples < 0:
        raise ParameterError("max_triples", "a whole number >= 0", max_triples)
    names = list(schema.names)

    def small(cols) -> bool:
        return int(np.prod([schema[c].size for c in cols], dtype=np.int64)) <= MAX_EVAL_CELLS

    pairs = [p for p in itertools.combinations(names, 2) if small(p)]
    triples = [t for t in itertools.combinations(names, 3) if small(t)]
    if len(triples) > max_triples:
        rng = np.random.default_rng(np.random.SeedSequence([seed, 3]))
        keep = np.sort(rng.choice(len(triples), size=max_triples, replace=False))
        triples = [triples[i] for i in keep]
    return {1: [(n,) for n in names if small((n,))], 2: pairs, 3: triples}


def count_all(df, schema: Schema, sets: dict[int, list[tuple[str, ...]]]) -> dict[tuple[str, ...], np.ndarray]:
    """Exact counts of every column set, in one distributed pass (clip policy for stray values)."""
    flat = [s for k in sorted(sets) for s in sets[k]]
    counts = count_marginals(df.select(*[f"`{c}`" for c in schema.names]), schema, flat, OutOfDomainPolicy.CLIP)
    return dict(zip(flat, counts))


def tvd(p_counts: np.ndarray, q_counts: np.ndarray) -> float:
    """Total-variation distance between two count arrays of the same shape (0 = identical, 1 = disjoint)."""
    p_total, q_total = p_counts.sum(), q_counts.sum()
    if p_total == 0 or q_total == 0:
        return 0.0 if p_total == q_total else 1.0
    return 0.5 * float(np.abs(p_counts / p_total - q_counts / q_total).sum())


def marginal_fidelity(real_counts: dict, synthetic_counts: dict, sets: dict[int, list[tuple[str, ...]]]) -> dict:
    """Mean / max TVD per marginal order, plus every 1-way TVD by column."""
    out: dict = {}
    for k, column_sets_k in sorted(sets.items()):
        values = [tvd(real_counts[s], synthetic_counts[s]) for s in column_sets_k]
        key = f"{k}way"
        if values:
            worst = int(np.argmax(values))
            out[key] = {"tvd_mean": float(np.mean(values)), "tvd_max": float(values[worst]),
                        "worst": list(column_sets_k[worst]), "n_marginals": len(values)}
        else:
            out[key] = {"tvd_mean": None, "tvd_max": None, "worst": None, "n_marginals": 0}
        if k == 1:
            out["1way"]["by_column"] = {s[0]: v for s, v in zip(column_sets_k, values)}
    return out


def independent_fidelity(real_counts: dict, sets: dict[int, list[tuple[str, ...]]], rows: int | None = None,
                         seed: int = 0) -> dict:
    """Mean / max TVD of the *independent reference*: every marginal of the real counts against the
    product of its columns' real 1-way marginals — what a synthesizer that draws every column on its
    own from the exact real marginals would score with no noise (the ``independent`` engine at ε = ∞).
    With ``rows``, each reference marginal is a seeded multinomial draw of that many rows (the
    synthetic table's size, so that its sampling error is the synthetic table's); without, the exact
    product (1-way TVD 0). Computed from the real counts: not private, and no budget is spent."""
    rng = np.random.default_rng(np.random.SeedSequence([seed, 17]))
    out: dict = {}
    for k, column_sets_k in sorted(sets.items()):
        values = []
        for s in column_sets_k:
            joint = real_counts[s]
            product = np.ones(())
            for name in s:
                one = real_counts[(name,)] if (name,) in real_counts else joint.sum(
                    axis=tuple(i for i, other in enumerate(s) if other != name))
                product = np.multiply.outer(product, one / max(one.sum(), 1))
            if rows:
                p = product.ravel()
                reference = rng.multinomial(int(rows), p / p.sum()).reshape(product.shape) if p.sum() > 0 else product
            else:
                reference = product
            values.append(tvd(joint, reference))
        out[f"{k}way"] = ({"tvd_mean": float(np.mean(values)), "tvd_max": float(np.max(values)), "n_marginals": len(values)}
                          if values else {"tvd_mean": None, "tvd_max": None, "n_marginals": 0})
    out["rows"] = int(rows) if rows else None
    return out


def hierarchy_fidelity(schema: Schema, real_counts: dict, synthetic_counts: dict) -> dict:
    """Per column with a hierarchy, the TVD at its codes and at each level (the 1-way counts summed
    into the level's public groups): Census-style error by level."""
    out = {}
    for column in schema:
        key = (column.name,)
        if not column.hierarchy or key not in real_counts:
            continue
        real, synthetic = real_counts[key], synthetic_counts[key]
        levels = {"code": tvd(real, synthetic)}
        for level, grouping in column.hierarchy_groupings():
            groups = np.asarray(grouping)
            levels[level] = tvd(np.bincount(groups, weights=real), np.bincount(groups, weights=synthetic))
        out[column.name] = levels
    return out


def marginal_labels(schema: Schema, name: str) -> list[str]:
    """Human-readable labels of a column's codes (categories or public bins, then 'null' when nullable)."""
    column = schema[name]
    if column.type.is_discrete:
        labels = [str(c) for c in column.categories]
    else:
        edges = column.bin_edges
        labels = [f"{_fmt(lo)}–{_fmt(hi)}" for lo, hi in zip(edges[:-1], edges[1:])]
    if column.nullable:
        labels.append("null")
    return labels


def _fmt(x: float) -> str:
    return f"{x:.3g}"
