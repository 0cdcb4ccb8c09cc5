"""SPLICE's formulas, each checked independently (closed form vs Monte Carlo, brute force)."""

import numpy as np
import pytest
import torch
from numpy.polynomial import chebyshev

from spark_synth.engines.splice.closed_form import chebyshev_power_coefficients
from spark_synth.engines.splice.directions import make_directions
from spark_synth.engines.splice.engine import moment_operator
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
