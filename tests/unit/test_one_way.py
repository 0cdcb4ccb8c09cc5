"""The DP 1-way histograms shared by `independent` and SPLICE's anchors (spark_synth/engines/one_way.py)."""

import math

import numpy as np
import pandas as pd
import pytest

from spark_synth.engines import IndependentEngine, LocalTaskRunner
from spark_synth.engines.one_way import column_distribution, range_grouping, within_range_shares
from spark_synth.errors import ParameterError
from spark_synth.oracle import oracle_over_frame
from spark_synth.privacy import NoisyMeasurement, PrivacyBudget, PrivacyFilter, gaussian_sigma
from spark_synth.queries import MarginalQuery
from spark_synth.schema import schema_from_dict

from ..helpers import small_table

MONTHS = {"name": "months", "type": "integer", "min": 4, "max": 76}  # 73 public values, one code each


def _column(raw):
    return schema_from_dict({"columns": [raw]}).columns[0]


def test_ranges_follow_the_dp_row_count_and_the_noise():
    months = _column(MONTHS)
    grouping = range_grouping(months, rows=800.0, sigma=30.0, sigmas_per_range=3.0)
    groups = math.floor(800 / 90)
    assert grouping == tuple((np.arange(73) * groups) // 73) + (groups,)  # the null code alone, last
    assert list(grouping[:-1]) == sorted(grouping[:-1])  # contiguous ranges of ordered codes
    assert range_grouping(months, rows=80_000.0, sigma=30.0, sigmas_per_range=3.0) is None  # codes hold enough rows
    assert range_grouping(months, rows=800.0, sigma=30.0, sigmas_per_range=0.0) is None  # turned off
    assert range_grouping(months, rows=-50.0, sigma=30.0, sigmas_per_range=3.0) == (0,) * 73 + (1,)  # one range at least
    colour = _column({"name": "colour", "type": "categorical", "categories": list("abcdefgh")})
    assert range_grouping(colour, rows=10.0, sigma=30.0, sigmas_per_range=3.0) is None  # no order: never merged
    grade = _column({"name": "grade", "type": "ordinal", "categories": list("abcdefgh"), "nullable": False})
    assert range_grouping(grade, rows=200.0, sigma=30.0, sigmas_per_range=3.0) == (0, 0, 0, 0, 1, 1, 1, 1)


def _release(column, counts, sigma, grouping=None, rng=None):
    query = MarginalQuery((column.name,), groupings=None if grouping is None else (grouping,))
    exact = np.asarray(counts, dtype=float)
    if grouping is not None:
        exact = np.bincount(grouping, weights=exact)
    noise = rng.normal(0, sigma, exact.size) if rng is not None else 0.0
    return NoisyMeasurement(query, exact + noise, sigma=sigma, rho=1.0)


def test_noise_free_releases_give_back_the_distribution():
    months = _column(MONTHS)
    counts = np.zeros(months.size)
    counts[[8, 20, 32, 44]] = [300, 250, 100, 50]  # spikes at 12, 24, 36, 48 months
    counts[:73] += 2
    grouping = range_grouping(months, rows=counts.sum(), sigma=40.0, sigmas_per_range=3.0)
    assert grouping is not None
    releases = [_release(months, counts, 1e-9), _release(months, counts, 1e-9, grouping)]
    assert np.allclose(column_distribution(months, releases, counts.sum(), null_floor=2.0), counts / counts.sum())


def test_least_squares_pools_ranges_and_code_sums_by_their_variances():
    months = _column({**MONTHS, "nullable": False})
    grouping = tuple(int(g) for g in (np.arange(73) * 4) // 73)
    rng = np.random.default_rng(3)
    counts = rng.integers(20, 60, 73).astype(float)
    fine, ranges = _release(months, counts, 5.0, rng=rng), _release(months, counts, 2.0, grouping, rng=rng)
    width = np.bincount(grouping)
    summed = np.bincount(grouping, weights=fine.values)
    expected = (ranges.values / 4.0 + summed / (width * 25.0)) / (1 / 4.0 + 1 / (width * 25.0))
    p = column_distribution(months, [fine, ranges], expected.sum(), null_floor=0.0)  # a total that needs no shift
    assert np.allclose(np.bincount(grouping, weights=p), expected / expected.sum(), atol=1e-12)


def test_a_noise_sized_null_cell_is_zeroed_and_a_real_one_kept():
    months = _column(MONTHS)
    counts = np.full(months.size, 50.0)
    counts[-1] = 0.0
    noisy_null = counts.copy()
    noisy_null[-1] = 1.9 * 10.0  # below 2σ
    assert column_distribution(months, [_release(months, noisy_null, 10.0)], counts.sum(), null_floor=2.0)[-1] == 0.0
    assert column_distribution(months, [_release(months, noisy_null, 10.0)], counts.sum(), null_floor=0.0)[-1] > 0.0
    real_null = counts.copy()
    real_null[-1] = 900.0
    p = column_distribution(months, [_release(months, real_null, 10.0)], real_null.sum(), null_floor=2.0)
    assert p[-1] == pytest.approx(900.0 / real_null.sum(), rel=1e-9)


def test_within_range_shares_keep_a_shape_above_the_noise_and_even_out_noise():
    groups = np.array([0] * 6 + [1] * 6)
    spike = np.array([0.0, 0.0, 400.0, 0.0, 0.0, 0.0])
    flat_noise = np.array([10.0, -8.0, 12.0, 5.0, -3.0, 2.0])  # all of it within σ = 10
    shares = within_range_shares(groups, np.concatenate([spike, flat_noise]), variance=100.0)
    assert shares[2] > 0.95 and np.allclose(shares[6:], 1 / 6)
    assert np.allclose(np.bincount(groups, weights=shares), 1.0)


def _coarse_tvd(column, real: np.ndarray, synthetic: np.ndarray) -> float:
    """TVD over 16 equal-width ranges of the column's public bounds (as the shared harness bins numbers)."""
    edges = column.bin_edges
    centres = (edges[:-1] + edges[1:]) / 2
    cell = np.clip(np.floor((centres - float(column.min)) / (float(column.max) - float(column.min)) * 16), 0, 15).astype(int)
    cell = np.append(cell, 16)
    r, s = np.bincount(cell, weights=real, minlength=17), np.bincount(cell, weights=synthetic, minlength=17)
    return 0.5 * np.abs(r / r.sum() - s / s.sum()).sum()


def test_small_table_numeric_error_and_spurious_nulls_beat_the_flat_histogram():
    """The case of issue 15: 800 rows, 21 columns, ε = 1. One flat histogram per column (the former
    estimator, ``one_way_fine_share=1, null_floor=0``) spreads noise over the wide numeric columns'
    empty codes and gives columns without nulls a noise-sized null share; the default does neither."""
    schema, frame = small_table(800, seed=0)
    numeric = [j for j, c in enumerate(schema) if not c.type.is_discrete]
    real = [np.bincount(frame_codes, minlength=c.size) for frame_codes, c in zip(_codes(frame, schema).T, schema)]
    results = {}
    for label, options in (("default", {}), ("flat", {"one_way_fine_share": 1.0, "null_floor": 0.0})):
        tvds, null_columns = [], 0
        for _ in range(8):
            privacy_filter = PrivacyFilter(PrivacyBudget(1.0, 1e-9))
            model = IndependentEngine(**options).fit(schema, oracle_over_frame(frame, schema, privacy_filter), LocalTaskRunner())
            assert privacy_filter.rho_remaining == pytest.approx(0.0, abs=1e-15)  # the whole budget, exactly
            tvds.append(np.mean([_coarse_tvd(schema.columns[j], real[j], model.probabilities[j]) for j in numeric]))
            null_columns += sum(p[-1] > 0 for p in model.probabilities[:18])
        results[label] = (float(np.mean(tvds)), null_columns)
    (default_tvd, default_nulls), (flat_tvd, flat_nulls) = results["default"], results["flat"]
    assert default_tvd < 0.9 * flat_tvd, results
    assert default_nulls <= 15 < flat_nulls, results  # of 8 × 18 columns that hold no nulls


def _codes(frame, schema):
    from spark_synth.schema import OutOfDomainPolicy
    from spark_synth.schema.encoding import encode_frame

    codes, _ = encode_frame(frame, schema, OutOfDomainPolicy.CLIP)
    return codes


@pytest.mark.parametrize("options, name", [
    ({"one_way_fine_share": 0.0}, "independent.one_way_fine_share"),
    ({"one_way_fine_share": 1.5}, "independent.one_way_fine_share"),
    ({"one_way_sigmas_per_range": -1.0}, "independent.one_way_sigmas_per_range"),
    ({"null_floor": float("nan")}, "independent.null_floor"),
])
def test_bad_one_way_options_name_the_option(options, name):
    with pytest.raises(ParameterError, match=name.replace(".", r"\.")):
        IndependentEngine(**options)


def test_noise_sigma_is_that_of_a_count_under_rho():
    assert gaussian_sigma(1.0, 0.5) == pytest.approx(1.0)
    assert gaussian_sigma(1.0, 0.02) == pytest.approx(5.0)
