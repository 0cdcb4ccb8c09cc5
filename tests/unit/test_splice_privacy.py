"""SPLICE's sensitivity bound, checked by brute force on neighbouring datasets; exact accounting."""

import math

import numpy as np
import pandas as pd
import pytest

from spark_synth.engines import SpliceEngine
from spark_synth.errors import ParameterError
from spark_synth.measure import chebyshev_fixed_point_sums
from spark_synth.measure.moments import exact_projection, projection_grid
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
    half_unit = 2.0 ** -(query.fraction_bits + 1)  # fixed-point rounding
    with_rounding = math.sqrt(10 * sum((1 / math.sqrt(j) + half_unit) ** 2 for j in range(1, 5)))
    assert query.l2_sensitivity == pytest.approx(with_rounding, rel=1e-9)
    assert query.l2_sensitivity == pytest.approx(math.sqrt(10 * (1 + 1 / 2 + 1 / 3 + 1 / 4)), rel=1e-6)
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
    rounding = len(x) * 2.0 ** -(query.fraction_bits + 1)  # at most half a unit per row and entry
    _, row_bits = projection_grid(query)  # the exact projection's public grid moves z by at most dz
    dz = 2.0 ** -(row_bits + 1) * np.abs(query.directions).sum(axis=1).max() + 2.0**-31 * x.shape[1]
    grid = len(x) * dz * np.arange(1, 9) ** 2 / np.sqrt(np.arange(1, 9))  # |T_j'| ≤ j² on [-1, 1]
    assert np.all(np.abs(fixed - exact) <= 1e-9 * absolute + rounding + grid)
    assert np.array_equal(chebyshev_fixed_point_sums(x[::-1], query), chebyshev_fixed_point_sums(x, query))


def test_a_rows_contribution_does_not_depend_on_its_batch():
    """Regression: the float matrix product's rounding depended on the batch (BLAS kernels, a lone
    row), so a row's fixed-point entry could differ by a unit with other rows present."""
    schema = tiny_schema()
    query = MomentQuery(name="m", directions=_query(schema).directions, degree=6, fraction_bits=48)
    x, _ = Embedding(schema).embed(tiny_frame(300, seed=2), OutOfDomainPolicy.CLIP)
    together = chebyshev_fixed_point_sums(x, query)
    alone = sum(chebyshev_fixed_point_sums(x[i : i + 1], query).astype(object) for i in range(len(x)))
    assert np.array_equal(together, alone.astype(np.int64))
    z = exact_projection(x, query)
    assert np.array_equal(z[17:18], exact_projection(x[17:18], query))
    _, row_bits = projection_grid(query)
    dz = 2.0 ** -(row_bits + 1) * np.abs(query.directions).sum(axis=1) + 2.0**-31 * x.shape[1]
    assert np.all(np.abs(z - x @ query.directions.T) <= dz) and dz.max() < 1e-6  # the public grid's resolution


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


def test_default_precision_comes_from_a_public_row_bound():
    """floor(62 − log2(max_rows)) bits: 10^12 rows of the largest entry (2^bits units) fit 2^62."""
    from spark_synth.queries import DEFAULT_MAX_ROWS, fraction_bits_for

    query = MomentQuery(name="m", directions=np.zeros((3, 2)), degree=4)
    assert DEFAULT_MAX_ROWS >= 10**12 and query.max_rows == DEFAULT_MAX_ROWS
    assert query.fraction_bits == fraction_bits_for(10**12) == math.floor(62 - math.log2(10**12)) == 22
    assert 10**12 * 2**22 <= 2**62 < 10**12 * 2**23
    assert MomentQuery(name="m", directions=np.zeros((3, 2)), degree=4, max_rows=2**40).fraction_bits == 22
    assert MomentQuery(name="m", directions=np.zeros((3, 2)), degree=4, max_rows=1000).fraction_bits == 48  # capped
    with pytest.raises(ParameterError, match="max_rows"):
        MomentQuery(name="m", directions=np.zeros((3, 2)), degree=4, max_rows=2**62)
    with pytest.raises(ParameterError, match="fraction_bits"):
        MomentQuery(name="m", directions=np.zeros((3, 2)), degree=4, fraction_bits=49)


def test_splice_option_still_sets_the_precision():
    schema = tiny_schema()
    assert SpliceEngine().moment_query(schema, None).fraction_bits == 22
    assert SpliceEngine(moment_fraction_bits=36).moment_query(schema, None).fraction_bits == 36
    for bad in (7, 49, 1.5):
        with pytest.raises(ParameterError, match="moment_fraction_bits"):
            SpliceEngine(moment_fraction_bits=bad)


def _extreme_rows(n_max, n_min):
    """One non-nullable continuous column; direction 1 on it: z = ±1 for rows at max/min."""
    from spark_synth.schema import Column, ColumnType, Schema

    schema = Schema(columns=(Column("v", ColumnType.CONTINUOUS, min=0.0, max=1.0, nullable=False),))
    frame = pd.DataFrame({"v": np.r_[np.ones(n_max), np.zeros(n_min)]})
    return schema, frame


def test_overflowing_sums_are_clamped_not_refused_and_partials_never_wrap():
    """Regression: a sum past 2^62 raised an error (whether it did depended on the data), and int64
    partial sums could wrap silently. Now each released sum is exact, then clamped to ±2^62."""
    from spark_synth.measure import answer_frame

    schema, frame = _extreme_rows(40960, 32768)  # 73,728 rows; 48 bits: one row adds ±2^48 to T_1, 2^48/√2 to T_2
    query = MomentQuery(name="m", directions=np.ones((1, 1)), degree=2, fraction_bits=48)
    (sums,) = answer_frame(frame, schema, [query])
    t2 = round(2.0**48 / math.sqrt(2))
    assert sums.tolist() == [[8192 * 2**48, 2**62]]  # T_1 exact (2^61) though partials passed 2^63; T_2 clamped
    assert 73728 * t2 > 2**63  # T_2's exact sum is past int64: old code wrapped or refused
    x, _ = Embedding(schema).embed(frame, OutOfDomainPolicy.CLIP)
    assert np.array_equal(chebyshev_fixed_point_sums(x, query), sums)


def test_clamping_keeps_the_sensitivity_at_the_boundary():
    from spark_synth.measure import answer_frame

    query = MomentQuery(name="m", directions=np.ones((1, 1)), degree=2, fraction_bits=48)
    unit = 2.0**48
    for n in (16383, 16384, 16385, 23170, 23171, 23172):  # around 2^62 / 2^48 and 2^62 / (2^48/√2)
        schema, small = _extreme_rows(n, 0)
        _, large = _extreme_rows(n + 1, 0)
        a, b = (answer_frame(f, schema, [query])[0] / unit for f in (small, large))
        assert np.abs(a).max() <= 2**62 / unit and np.abs(b).max() <= 2**62 / unit
        assert np.sqrt(((a - b) ** 2).sum()) <= query.l2_sensitivity
