"""SPLICE's sensitivity bound, checked by brute force on neighbouring datasets; exact accounting."""

import math

import numpy as np
import pandas as pd
import pytest

from spark_synth.engines import SpliceEngine
from spark_synth.measure import chebyshev_fixed_point_sums
from spark_synth.privacy import PrivacyBudget, PrivacyFilter, release_query, split_rho
from spark_synth.queries import MomentQuery
from spark_synth.schema import OutOfDomainPolicy
from spark_synth.schema.embedding import Embedding
from tests.helpers import tiny_frame, tiny_schema


def _query(schema, degree=6):
    from spark_synth.engines.splice.directions import make_directions

    directions, _ = make_directions(schema, n_dense=5, n_sparse=20, seed=4)
    return MomentQuery(name="m", directions=directions, degree=degree)


@pytest.mark.parametrize("adaptive_knots", [False, True])
def test_sensitivity_bound_holds_for_add_remove_neighbours(adaptive_knots):
    """Also with the adaptive encoding's knots (from arbitrary, even degenerate, histograms): the
    bound does not depend on them."""
    from spark_synth.engines.splice.engine import encoding_knots

    schema = tiny_schema()
    query = _query(schema)
    unit = 2.0**query.fraction_bits
    worst = 0.0
    rng = np.random.default_rng(7)
    for seed in range(20):
        frame = tiny_frame(30, seed=seed)
        anchors = [rng.dirichlet(np.full(c.size, 0.2)) for c in schema]  # spiky: many near-empty bins
        knots = encoding_knots(schema, anchors, mix=float(rng.uniform(0.5, 1.0))) if adaptive_knots else None
        x, _ = Embedding(schema, knots).embed(frame, OutOfDomainPolicy.CLIP)
        full = chebyshev_fixed_point_sums(x, query) / unit
        for drop in range(0, 30, 7):
            neighbour = chebyshev_fixed_point_sums(np.delete(x, drop, axis=0), query) / unit
            change = np.sqrt(((full - neighbour) ** 2).sum())
            assert change <= query.l2_sensitivity
            worst = max(worst, change / query.l2_sensitivity)
    assert worst > 0.3  # the bound is not vacuous for real rows


def test_sensitivity_formula():
    query = MomentQuery(name="m", directions=np.zeros((10, 3)), degree=4)
    assert query.l2_sensitivity == pytest.approx(math.sqrt(10 * (1 + 1 / 2 + 1 / 3 + 1 / 4)), rel=1e-9)
    assert query.l2_sensitivity >= math.sqrt(10 * (1 + 1 / 2 + 1 / 3 + 1 / 4))


def test_fixed_point_sums_match_float_computation():
    schema = tiny_schema()
    query = _query(schema, degree=8)
    x, _ = Embedding(schema).embed(tiny_frame(500, seed=1), OutOfDomainPolicy.CLIP)
    fixed = chebyshev_fixed_point_sums(x, query) / 2.0**query.fraction_bits
    z = x @ query.directions.T
    from numpy.polynomial import chebyshev

    exact = np.stack([chebyshev.chebval(z, np.eye(9)[j]).sum(0) / np.sqrt(j) for j in range(1, 9)], axis=1)
    absolute = np.stack([np.abs(chebyshev.chebval(z, np.eye(9)[j])).sum(0) / np.sqrt(j) for j in range(1, 9)], axis=1)
    assert np.all(np.abs(fixed - exact) <= 1e-9 * absolute + 1e-12)


def test_moment_release_is_accounted_exactly():
    budget = PrivacyBudget(1.0, 1e-9)
    engine = SpliceEngine(marginal_share=0.25)
    schema = tiny_schema()
    moment_query = engine.moment_query(schema, None)
    privacy_filter = PrivacyFilter(budget)
    shares = split_rho(privacy_filter.rho_total, [0.25 / len(schema)] * len(schema) + [0.75])
    assert shares[-1] == pytest.approx(0.75 * budget.rho, rel=1e-12)
    sums = np.zeros((moment_query.n_directions, moment_query.degree), dtype=np.int64)
    out = release_query(privacy_filter, moment_query, sums, shares[-1])
    expected_sigma = moment_query.l2_sensitivity / math.sqrt(2 * shares[-1])
    assert out.sigma == pytest.approx(expected_sigma, rel=1e-9)
    (record,) = privacy_filter.report().entries
    assert record.l2_sensitivity == pytest.approx(moment_query.l2_sensitivity, rel=1e-9)
    assert record.rho <= shares[-1] and out.rho == record.rho
    # the noise has that σ (accept σ, reject σ(1±0.3)) — 400×12 draws
    big = MomentQuery(name="big", directions=np.zeros((400, 2)), degree=12, fraction_bits=32)
    second = PrivacyFilter(budget)
    noise = release_query(second, big, np.zeros((400, 12), dtype=np.int64), second.rho_total)
    ratio = noise.values.std() / noise.sigma
    assert 0.95 < ratio < 1.05
