"""SPLICE's formulas, each checked independently (closed form vs Monte Carlo, brute force)."""

import math

import numpy as np
import pytest
import torch
from numpy.polynomial import chebyshev

from spark_synth.engines.splice.closed_form import chebyshev_power_coefficients, series_exp, series_log
from spark_synth.engines.splice.directions import make_directions
from spark_synth.engines.splice.match import moment_operator
from spark_synth.engines.splice.model import SpliceModel
from spark_synth.schema.embedding import Embedding
from tests.helpers import tiny_schema


def test_chebyshev_power_coefficients_match_numpy():
    z = np.linspace(-1, 1, 101)
    coef = chebyshev_power_coefficients(10)
    for j in range(1, 11):
        basis = np.zeros(j + 1)
        basis[j] = 1
        assert np.allclose(np.polyval(coef[j - 1][::-1], z), chebyshev.chebval(z, basis), atol=1e-12)


def _codes_to_embedding(schema, codes):
    emb = Embedding(schema)
    return np.concatenate([emb.code_vectors(j)[codes[:, j]] for j in range(len(schema))], axis=1)


def _direct_moments(z, degree):
    return np.stack([chebyshev.chebval(z, np.eye(degree + 1)[j]).mean(axis=0) for j in range(1, degree + 1)], axis=1)


@pytest.fixture(scope="module")
def mixture():
    schema = tiny_schema()
    rng = np.random.default_rng(3)
    probs = [rng.dirichlet(np.ones(c.size), size=3) for c in schema]
    weights = np.array([0.5, 0.3, 0.2])
    directions, supports = make_directions(schema, n_dense=4, n_sparse=6, seed=1)
    return schema, SpliceModel(weights, probs, 1.0), directions, supports


def test_closed_form_equals_monte_carlo(mixture):
    schema, model, directions, supports = mixture
    degree = 8
    op = moment_operator(schema, directions, supports, degree, torch.device("cpu"))
    closed = op.mixture_moments(torch.as_tensor(model.weights), [torch.as_tensor(p) for p in model.probabilities]).numpy()
    codes = model.sample_codes(200_000, np.random.default_rng(0))
    z = _codes_to_embedding(schema, codes) @ directions.T
    monte_carlo = _direct_moments(z, degree)
    standard_error = 1.0 / np.sqrt(len(codes))  # |T_j| <= 1
    assert np.abs(closed - monte_carlo).max() < 5 * standard_error
    # and the check has power: a different mixture is clearly distinguishable
    other = op.mixture_moments(torch.as_tensor(model.weights[::-1].copy()), [torch.as_tensor(p) for p in model.probabilities]).numpy()
    assert np.abs(other - monte_carlo).max() > 20 * standard_error


def test_closed_form_is_exact_for_point_masses(mixture):
    schema, _, directions, supports = mixture
    rng = np.random.default_rng(5)
    codes = np.array([[rng.integers(c.size) for c in schema]])
    probs = [torch.as_tensor(np.eye(c.size)[codes[0, j]][None, :]) for j, c in enumerate(schema)]
    op = moment_operator(schema, directions, supports, 10, torch.device("cpu"))
    closed = op.mixture_moments(torch.ones(1, dtype=torch.float64), probs).numpy()
    z = _codes_to_embedding(schema, codes) @ directions.T
    assert np.allclose(closed, _direct_moments(z, 10), atol=1e-10)


def test_every_possible_row_projects_into_unit_interval():
    """Direction scaling: |wᵀx| <= 1 for all rows, including extreme ones (corners, nulls)."""
    schema = tiny_schema()
    directions, _ = make_directions(schema, n_dense=50, n_sparse=50, seed=2)
    grids = [range(c.size) for c in schema]
    codes = np.array(np.meshgrid(*grids, indexing="ij")).reshape(len(schema), -1).T
    z = _codes_to_embedding(schema, codes) @ directions.T
    assert np.abs(z).max() <= 1.0
    # the sparse pair directions use most of the interval (the scaling is not wastefully loose)
    assert np.abs(z[:, 50:]).max() > 0.5


def test_directions_are_deterministic_and_public():
    schema = tiny_schema()
    a, sa = make_directions(schema, 3, 5, seed=9)
    b, sb = make_directions(schema, 3, 5, seed=9)
    c, _ = make_directions(schema, 3, 5, seed=10)
    assert np.array_equal(a, b) and sa == sb and not np.array_equal(a, c)
    assert all(len(s) == 2 for s in sa[3:]) and all(len(s) == len(schema) for s in sa[:3])


def test_pair_directions_cover_every_pair_evenly():
    schema = tiny_schema()  # 4 columns -> 6 pairs
    _, supports = make_directions(schema, n_dense=0, n_sparse=15, seed=0)
    counts = {}
    for s in supports:
        counts[s] = counts.get(s, 0) + 1
    assert len(counts) == 6 and set(counts.values()) <= {2, 3}


def _random_series(rng, k, batch):
    """Scaled moments of random discrete laws on [-1, 1]: s_m = E[v^m] / m!, s_0 = 1."""
    values, probs = rng.uniform(-1, 1, (batch, 5)), rng.dirichlet(np.ones(5), batch)
    factorial = np.array([math.factorial(m) for m in range(k + 1)])
    return np.stack([(probs * values**m).sum(1) / factorial[m] for m in range(k + 1)])  # (k+1, batch)


def test_series_log_and_exp_are_truncated_power_series_maps():
    """exp(log a + log b) is the truncated product a·b (np.convolve), and exp undoes log."""
    rng = np.random.default_rng(0)
    k = 10
    a, b = _random_series(rng, k, 7), _random_series(rng, k, 7)
    log_a, log_b = series_log(torch.as_tensor(a)), series_log(torch.as_tensor(b))
    product = series_exp(log_a + log_b).numpy()
    expected = np.stack([np.convolve(a[:, i], b[:, i])[: k + 1] for i in range(7)], axis=1)
    assert np.allclose(product, expected, rtol=1e-10, atol=1e-15)
    assert np.allclose(series_exp(log_a).numpy(), a, rtol=1e-10, atol=1e-15)
    # log of a series with s_0 != 1 is that of the normalised series (the constant log s_0 is dropped)
    assert np.allclose(series_log(torch.as_tensor(2.5 * a)).numpy(), log_a.numpy(), rtol=1e-12, atol=1e-15)


def test_series_log_and_exp_gradients():
    rng = np.random.default_rng(1)
    s = torch.as_tensor(_random_series(rng, 6, 4) * rng.uniform(0.5, 2.0, 4)).requires_grad_()
    c = torch.as_tensor(rng.normal(0, 0.3, (6, 4))).requires_grad_()
    assert torch.autograd.gradcheck(series_log, (s,))
    assert torch.autograd.gradcheck(series_exp, (c,))


def test_component_moments_equal_a_sequential_convolution(mixture):
    """The cumulant route (sum of per-column series logs, one exp) against the direct product of the
    per-column scaled-moment series, direction by direction, in numpy."""
    schema, model, directions, supports = mixture
    degree = 9
    emb = Embedding(schema)
    op = moment_operator(schema, directions, supports, degree, torch.device("cpu"))
    closed = op.component_moments([torch.as_tensor(p) for p in model.probabilities]).numpy()  # (K, L, k)
    factorial = np.array([math.factorial(m) for m in range(degree + 1)], dtype=float)
    cheb = chebyshev_power_coefficients(degree)
    for k, _ in enumerate(model.weights):
        for l, support in enumerate(supports):
            series = np.eye(degree + 1)[0]
            for j in support:
                v = emb.code_vectors(j) @ directions[l, emb.block(j)]  # the column's code projections
                part = np.array([model.probabilities[j][k] @ v**m for m in range(degree + 1)]) / factorial
                series = np.convolve(series, part)[: degree + 1]
            assert np.allclose(closed[k, l], cheb @ (series * factorial), atol=1e-10)


def test_mixture_moments_gradient():
    """The hand-written backward passes, end to end through the operator (small problem, gradcheck)."""
    schema = tiny_schema()
    directions, supports = make_directions(schema, n_dense=2, n_sparse=3, seed=4)
    op = moment_operator(schema, directions, supports, 6, torch.device("cpu"))
    rng = np.random.default_rng(2)
    logits = [torch.as_tensor(rng.normal(size=(2, c.size))).requires_grad_() for c in schema]
    weights = torch.tensor([0.4, 0.6], dtype=torch.float64)

    def moments(*flat):
        return op.mixture_moments(weights, [torch.softmax(x, 1) for x in flat])

    assert torch.autograd.gradcheck(moments, tuple(logits))
