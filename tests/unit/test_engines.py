import numpy as np
import pytest

import math

from spark_synth.engines import IndependentEngine, IndependentModel, LocalTaskRunner, get_engine
from spark_synth.engines.postprocess import estimate_total, project_to_simplex
from spark_synth.errors import ParameterError
from spark_synth.privacy import NoisyMeasurement
from spark_synth.queries import MarginalQuery
from tests.helpers import ExactOracle, tiny_frame, tiny_schema


def test_projection_onto_simplex():
    p = project_to_simplex(np.array([5.0, -3.0, 1.0, 0.2]), total=6.0)
    assert p.sum() == pytest.approx(6.0) and (p >= 0).all()
    assert p[1] == 0.0
    # already feasible points are fixed points
    q = np.array([1.0, 2.0, 3.0])
    assert np.allclose(project_to_simplex(q, 6.0), q)
    # matches a brute-force constrained least squares
    from scipy.optimize import minimize

    v = np.array([3.0, -1.0, 0.5, 2.5, -0.2])
    res = minimize(lambda x: ((x - v) ** 2).sum(), np.full(5, 1.0), bounds=[(0, None)] * 5,
                   constraints=[{"type": "eq", "fun": lambda x: x.sum() - 4.0}])
    assert np.allclose(project_to_simplex(v, 4.0), res.x, atol=1e-5)


def test_total_estimate_weights_by_variance():
    a = NoisyMeasurement(MarginalQuery(("a",), name="a"), np.array([50.0, 50.0]), sigma=1.0, rho=1.0)
    b = NoisyMeasurement(MarginalQuery(("b",), name="b"), np.array([30.0, 30.0]), sigma=100.0, rho=1.0)
    assert estimate_total([a, b]) == pytest.approx(100.0, abs=0.01)


def test_independent_recovers_exact_marginals_without_noise():
    """Recovery: with (near) zero noise the model reproduces the measured 1-way marginals."""
    schema = tiny_schema()
    rng = np.random.default_rng(0)
    counts = {c.name: rng.integers(0, 100, c.size).astype(float) for c in schema}
    for c in counts.values():
        c[0] += 1
    n = 1000.0
    counts = {k: v / v.sum() * n for k, v in counts.items()}
    measurements = [NoisyMeasurement(MarginalQuery((k,), name=f"m{k}"), v, sigma=1e-9, rho=1.0) for k, v in counts.items()]
    model = IndependentEngine().fit_measurements(schema, measurements)
    for column, p in zip(schema, model.probabilities):
        assert np.allclose(p, counts[column.name] / n)
    codes = model.sample_codes(200_000, np.random.default_rng(1))
    for j, column in enumerate(schema):
        freq = np.bincount(codes[:, j], minlength=column.size) / len(codes)
        assert np.abs(freq - counts[column.name] / n).max() < 0.01


def test_model_state_round_trip_and_determinism():
    schema = tiny_schema()
    probs = [np.full(c.size, 1.0 / c.size) for c in schema]
    model = IndependentModel(probs, 10.0)
    again = IndependentModel.from_state(model.to_state(), schema)
    a = model.sample_codes(50, np.random.default_rng(7))
    b = again.sample_codes(50, np.random.default_rng(7))
    assert (a == b).all()


def test_measures_each_column_in_two_stages_with_equal_shares_of_the_whole_budget():
    schema = tiny_schema()
    oracle = ExactOracle(tiny_frame(300), schema, rho=0.5)
    IndependentEngine().fit(schema, oracle, LocalTaskRunner())
    names = [f"1-way[{c}]" for c in ("colour", "size", "age", "score")]
    assert [name for _, name, _ in oracle.calls] == names + names  # 300 rows: every code holds enough, no ranges
    rhos = [r for _, _, r in oracle.calls]
    assert math.fsum(rhos) <= 0.5 and math.fsum(rhos) == pytest.approx(0.5, rel=1e-12)
    per_column = [rhos[j] + rhos[j + 4] for j in range(4)]
    assert max(per_column) == pytest.approx(min(per_column), rel=1e-12)
    assert rhos[0] == pytest.approx(0.5 * per_column[0], rel=1e-12)  # stage 1: one_way_fine_share


def test_one_flat_histogram_per_column_when_the_fine_share_is_one():
    schema = tiny_schema()
    oracle = ExactOracle(tiny_frame(300), schema, rho=0.5)
    IndependentEngine(one_way_fine_share=1.0).fit(schema, oracle, LocalTaskRunner())
    assert [name for _, name, _ in oracle.calls] == [f"1-way[{c}]" for c in ("colour", "size", "age", "score")]
    rhos = [r for _, _, r in oracle.calls]
    assert math.fsum(rhos) == pytest.approx(0.5, rel=1e-12) and len(set(rhos)) == 1


def test_unknown_engine():
    with pytest.raises(ParameterError, match="'engine' must be one of"):
        get_engine("magic")
