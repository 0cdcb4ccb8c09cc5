"""SPLICE's low-rank Gaussian numeric block (numeric_model="gaussian"), each formula checked independently."""

import math

import numpy as np
import pandas as pd
import pytest
import torch
from numpy.polynomial import chebyshev
from scipy import stats

from spark_synth.engines import IndependentEngine, SpliceEngine
from spark_synth.engines.splice.closed_form import GaussianParameters, gaussian_scaled_moments
from spark_synth.engines.splice.directions import make_directions
from spark_synth.engines.splice.engine import gaussian_columns
from spark_synth.engines.splice.match import moment_operator
from spark_synth.engines.splice.gaussian import GaussianBlock
from spark_synth.errors import ParameterError
from spark_synth.schema import Column, ColumnType, OutOfDomainPolicy, Schema, encode_frame
from spark_synth.schema.embedding import Embedding
from tests.helpers import exact_fit, exact_splice_measurements

MIXED = Schema(
    columns=(
        Column("colour", ColumnType.CATEGORICAL, categories=("red", "green", "blue"), nullable=True),
        Column("age", ColumnType.INTEGER, min=0, max=9, nullable=False),
        Column("size", ColumnType.ORDINAL, categories=(1, 2, 3), nullable=False),
        Column("score", ColumnType.CONTINUOUS, min=0.0, max=1.0, bins=8, nullable=False),
        Column("spend", ColumnType.CONTINUOUS, min=0.0, max=1.0, bins=8, nullable=True),
    )
)
NUMERIC = (1, 3)  # age, score: non-nullable numeric; spend is nullable, so it keeps a code distribution


def _chebyshev_means(z, degree):
    """(L, degree) sample means of T_j(z) and their standard errors."""
    values = np.stack([chebyshev.chebval(z, np.eye(degree + 1)[j]) for j in range(1, degree + 1)], axis=-1)
    return values.mean(axis=0), values.std(axis=0) / np.sqrt(len(z))


def test_gaussian_scaled_moments_match_scipy():
    mean, variance = np.array([0.3, -0.7]), np.array([0.04, 0.5])
    scaled = gaussian_scaled_moments(torch.as_tensor(mean), torch.as_tensor(variance), 9).numpy()
    for i in range(2):
        law = stats.norm(loc=mean[i], scale=np.sqrt(variance[i]))
        raw = np.array([law.moment(m) for m in range(10)])
        assert np.allclose(scaled[i] * [math.factorial(m) for m in range(10)], raw, rtol=1e-9, atol=1e-12)


def test_gaussian_columns_are_numeric_ones_without_many_nulls():
    assert gaussian_columns(MIXED, "gaussian") == NUMERIC
    assert gaussian_columns(MIXED, "histogram") == ()
    anchors = [np.full(c.size, 1.0 / c.size) for c in MIXED]  # spend: 1/9 of rows null
    assert gaussian_columns(MIXED, "gaussian", anchors, max_null_share=0.01) == NUMERIC
    anchors[4] = np.append(np.full(8, 0.995 / 8), 0.005)  # DP null share 0.5 %: joins the block
    assert gaussian_columns(MIXED, "gaussian", anchors, max_null_share=0.01) == (1, 3, 4)


def _mixture(seed=4, k=3, rank=2, scale=0.12):
    rng = np.random.default_rng(seed)
    code_columns = [j for j in range(len(MIXED)) if j not in NUMERIC]
    probs = [rng.dirichlet(np.ones(MIXED.columns[j].size), size=k) for j in code_columns]
    weights = np.array([0.5, 0.3, 0.2])
    mean = rng.uniform(-0.5, 0.5, size=(k, len(NUMERIC)))
    factor = scale * rng.standard_normal((k, len(NUMERIC), rank))
    diag = (scale * rng.uniform(0.3, 1.0, size=(k, len(NUMERIC)))) ** 2
    return weights, probs, GaussianParameters(*(torch.as_tensor(a) for a in (mean, factor, diag)))


def _monte_carlo_rows(weights, probs, gaussian, n, rng):
    """Embedded rows drawn directly: component, codes, then the Gaussian's value coordinates."""
    emb = Embedding(MIXED)
    components = rng.choice(len(weights), size=n, p=weights)
    x = np.zeros((n, emb.width))
    code_columns = [j for j in range(len(MIXED)) if j not in NUMERIC]
    for p, j in zip(probs, code_columns):
        cdf = np.cumsum(p[components], axis=1)
        codes = np.minimum((rng.random(n)[:, None] >= cdf).sum(1), p.shape[1] - 1)
        x[:, emb.block(j)] = emb.code_vectors(j)[codes]
    mean, factor, diag = (t.numpy() for t in gaussian)
    cov = factor @ factor.transpose(0, 2, 1) + np.stack([np.diag(d) for d in diag])
    for k in range(len(weights)):
        rows = components == k
        values = rng.multivariate_normal(mean[k], cov[k], size=rows.sum())
        for i, j in enumerate(NUMERIC):
            x[rows, emb.offsets[j]] = values[:, i]
    return x


def test_gaussian_closed_form_equals_monte_carlo():
    weights, probs, gaussian = _mixture()
    directions, supports = make_directions(MIXED, n_dense=4, n_sparse=10, seed=2)
    degree = 8
    op = moment_operator(MIXED, directions, supports, degree, torch.device("cpu"), NUMERIC)
    closed = op.mixture_moments(torch.as_tensor(weights), [torch.as_tensor(p) for p in probs], gaussian).numpy()
    z = _monte_carlo_rows(weights, probs, gaussian, 300_000, np.random.default_rng(0)) @ directions.T
    monte_carlo, standard_error = _chebyshev_means(z, degree)
    assert np.abs(closed - monte_carlo).max() < 5 * standard_error.max()
    assert (np.abs(closed - monte_carlo) / standard_error).max() < 5.5
    # power: dropping the low-rank factor (the correlation) is clearly visible in the moments
    no_factor = GaussianParameters(gaussian.mean, torch.zeros_like(gaussian.factor), gaussian.diag)
    other = op.mixture_moments(torch.as_tensor(weights), [torch.as_tensor(p) for p in probs], no_factor).numpy()
    assert (np.abs(other - monte_carlo) / standard_error).max() > 20


def test_gaussian_closed_form_is_exact_for_point_masses():
    weights, probs, gaussian = _mixture(scale=0.0)
    point = GaussianParameters(gaussian.mean, gaussian.factor, torch.full_like(gaussian.diag, 0.0))
    one_hot = [torch.as_tensor(np.eye(p.shape[1])[[0, 1, 2]][:, : p.shape[1]] if p.shape[1] >= 3 else p) for p in probs]
    directions, supports = make_directions(MIXED, n_dense=3, n_sparse=10, seed=5)
    op = moment_operator(MIXED, directions, supports, 10, torch.device("cpu"), NUMERIC)
    closed = op.component_moments(one_hot, point).numpy()  # (K, L, k)
    emb = Embedding(MIXED)
    code_columns = [j for j in range(len(MIXED)) if j not in NUMERIC]
    for k in range(3):
        x = np.zeros(emb.width)
        for p, j in zip(one_hot, code_columns):
            x[emb.block(j)] = emb.code_vectors(j)[int(np.argmax(p[k].numpy()))]
        for i, j in enumerate(NUMERIC):
            x[emb.offsets[j]] = float(point.mean[k, i])
        z = x @ directions.T
        direct = np.stack([chebyshev.chebval(z, np.eye(11)[j]) for j in range(1, 11)], axis=-1)
        assert np.allclose(closed[k], direct, atol=1e-10)


def _block(calibration=None, null_share=(0.0, 0.0)):
    _, _, g = _mixture(scale=0.3)
    emb = Embedding(MIXED)
    return GaussianBlock(columns=NUMERIC, mean=g.mean.numpy(), factor=g.factor.numpy(), diag=g.diag.numpy(),
                         edges=tuple(emb.value_edges(j) for j in NUMERIC), calibration=calibration, null_share=null_share)


def test_clipped_decoding_matches_the_models_bin_probabilities():
    block, weights = _block(), np.array([0.5, 0.3, 0.2])
    rng = np.random.default_rng(1)
    components = rng.choice(3, size=200_000, p=weights)
    codes = block.to_codes(block.draw(components, rng), rng)
    for i, j in enumerate(NUMERIC):
        empirical = np.bincount(codes[:, i], minlength=MIXED.columns[j].size) / len(codes)
        assert np.abs(empirical - block.bin_probabilities(i, weights)).max() < 0.006
    # the draw has the modelled correlation within a component
    latent = block.draw(np.zeros(200_000, dtype=int), rng)
    cov = block.factor[0] @ block.factor[0].T + np.diag(block.diag[0])
    assert np.allclose(np.cov(latent.T), cov, atol=0.01)


def test_calibrated_decoding_reproduces_the_dp_marginals_and_keeps_dependence():
    """Stratified-rank quantile map: every bin gets the anchor's expected count, rounded (< 1 row
    off); the latent rank order is kept; the codes are the direct quantile map u = F_model(g)'s
    except near bin edges (the batch's empirical CDF tends to F_model)."""
    rng = np.random.default_rng(2)
    anchors = tuple(rng.dirichlet(np.ones(MIXED.columns[j].size)) for j in NUMERIC)
    block, weights = _block(calibration=anchors), np.array([0.5, 0.3, 0.2])
    n = 200_000
    latent = block.draw(rng.choice(3, size=n, p=weights), rng)
    codes = block.to_codes(latent, rng)
    for i, j in enumerate(NUMERIC):
        counts = np.bincount(codes[:, i], minlength=MIXED.columns[j].size)
        assert np.abs(counts - n * anchors[i]).max() < 1
        order = np.argsort(latent[:, i])
        assert np.all(np.diff(codes[order, i]) >= 0)  # monotone: the rank order of the draws is kept
        cumulative = np.cumsum(anchors[i])
        direct = np.minimum(np.searchsorted(cumulative, block.model_cdf(i, latent[:, i], weights) * cumulative[-1], side="right"),
                            len(cumulative) - 1)
        assert (codes[:, i] == direct).mean() > 0.99
    # nulls at the DP share (rounded), drawn on top of the calibrated values, on rows chosen at random
    nulled = _block(calibration=anchors, null_share=(0.0, 0.05)).to_codes(latent, rng)
    assert abs((nulled[:, 1] == 8).sum() - 0.05 * n) < 1 and not (nulled[:, 0] == MIXED.columns[1].n_values).any()
    assert abs(np.corrcoef(nulled[:, 1] == 8, latent[:, 1])[0, 1]) < 0.01


def test_calibrated_decoding_draws_each_row_from_the_anchor():
    """Each row's code is an exact draw from the DP anchor, however few rows are drawn together:
    over many batches of 3 rows, the first row's code frequencies match the anchor (chi-square)."""
    from scipy.stats import chisquare

    rng = np.random.default_rng(4)
    anchors = tuple(rng.dirichlet(np.ones(MIXED.columns[j].size) * 5) for j in NUMERIC)
    block, weights = _block(calibration=anchors), np.array([0.5, 0.3, 0.2])
    first = np.array([block.to_codes(block.draw(rng.choice(3, size=3, p=weights), rng), rng)[0, 0] for _ in range(20_000)])
    expected = 20_000 * anchors[0]
    assert chisquare(np.bincount(first, minlength=len(expected)), expected).pvalue > 1e-3


def _correlated_frame(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    colour = rng.choice(["red", "green", "blue"], n, p=[0.5, 0.3, 0.2])
    base = np.where(colour == "red", 0.3, 0.7) + 0.12 * rng.standard_normal(n)
    score = np.clip(base + 0.05 * rng.standard_normal(n), 0, 1)
    age = np.clip(np.rint(9 * (1 - base) + 0.5 * rng.standard_normal(n)), 0, 9).astype(int)
    spend = np.where(rng.random(n) < 0.1, np.nan, rng.random(n))
    return pd.DataFrame({"colour": colour, "age": age, "size": rng.choice([1, 2, 3], n), "score": score, "spend": spend})


def _exact_measurements(engine, frame):
    return exact_splice_measurements(engine, MIXED, frame)


@pytest.fixture(scope="module")
def fitted():
    frame = _correlated_frame()
    engine = SpliceEngine(numeric_model="gaussian", rank=1, components=4, n_dense=8, n_sparse=40, steps=400)
    return frame, engine, exact_fit(engine, MIXED, frame)


def test_gaussian_engine_recovers_numeric_dependence(fitted):
    frame, _, model = fitted
    assert model.gaussian is not None and model.gaussian.columns == NUMERIC and len(model.probabilities) == 3
    codes = model.sample_codes(20_000, np.random.default_rng(0))
    real, _ = encode_frame(frame, MIXED, OutOfDomainPolicy.CLIP)
    real_corr = np.corrcoef(real[:, 1], real[:, 3])[0, 1]
    assert real_corr < -0.7
    assert np.corrcoef(codes[:, 1], codes[:, 3])[0, 1] < -0.5  # age falls as score rises
    indep = IndependentEngine()
    indep_codes = exact_fit(indep, MIXED, frame).sample_codes(20_000, np.random.default_rng(0))
    assert abs(np.corrcoef(indep_codes[:, 1], indep_codes[:, 3])[0, 1]) < 0.05
    # the categorical column still drives the numeric ones (component structure)
    assert codes[codes[:, 0] == 0, 3].mean() + 1 < codes[codes[:, 0] == 1, 3].mean()
    # calibrated to the (here exact) 1-way marginals
    for j in NUMERIC:
        size = MIXED.columns[j].size
        tvd = 0.5 * np.abs(np.bincount(codes[:, j], minlength=size) / len(codes) - np.bincount(real[:, j], minlength=size) / len(real)).sum()
        assert tvd < 0.03


def test_gaussian_model_state_round_trip_and_determinism(fitted):
    frame, engine, model = fitted
    again = type(model).from_state(model.to_state(), MIXED)
    assert np.array_equal(model.sample_codes(500, np.random.default_rng(3)), again.sample_codes(500, np.random.default_rng(3)))
    refit = exact_fit(engine, MIXED, frame)
    assert np.array_equal(refit.gaussian.mean, model.gaussian.mean) and np.array_equal(refit.weights, model.weights)


@pytest.mark.parametrize("option, value", [("numeric_model", "normal"), ("rank", -1), ("rank", 1.5)])
def test_bad_gaussian_options_are_named(option, value):
    with pytest.raises(ParameterError, match=f"splice.{option}"):
        SpliceEngine(**{option: value})


def test_gaussian_cumulants_give_its_scaled_moments():
    """The operator adds a Gaussian as its scaled cumulants (mean, variance / 2, 0, ...): their series
    exponential is the moment recurrence's answer."""
    from spark_synth.engines.splice.closed_form import series_exp

    mean, variance = torch.tensor([0.3, -0.7, 0.0], dtype=torch.float64), torch.tensor([0.04, 0.5, 1.0], dtype=torch.float64)
    cumulants = torch.zeros(9, 3, dtype=torch.float64)
    cumulants[0], cumulants[1] = mean, variance / 2
    assert np.allclose(series_exp(cumulants).numpy().T, gaussian_scaled_moments(mean, variance, 9).numpy(), rtol=1e-12, atol=1e-15)
