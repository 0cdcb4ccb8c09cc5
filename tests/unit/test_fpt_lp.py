"""FPT LP mode: column generation with max-sum pricing reaches the full-domain LP optimum."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from scipy import optimize

from spark_synth.engines.fpt.lp import Target, solve


def _full_domain_optimum(sizes, targets):
    """The same minimax LP with every domain point as a variable (brute force)."""
    points = list(itertools.product(*[range(s) for s in sizes]))
    rows = []
    for t in targets:
        for cell in itertools.product(*[range(s) for s in t.values.shape]):
            rows.append([1.0 if tuple(x[v] for v in t.scope) == cell else 0.0 for x in points])
    a = np.array(rows)
    answers = np.concatenate([t.values.ravel() for t in targets])
    k = len(points)
    a_ub = np.block([[a, -np.ones((len(a), 1))], [-a, -np.ones((len(a), 1))]])
    cost = np.zeros(k + 1)
    cost[-1] = 1.0
    result = optimize.linprog(cost, A_ub=a_ub, b_ub=np.concatenate([answers, -answers]),
                              A_eq=np.concatenate([np.ones(k), [0.0]])[None], b_eq=[1.0], bounds=(0, None), method="highs")
    return result.fun


def _noisy_targets(sizes, scopes, seed):
    rng = np.random.default_rng(seed)
    joint = rng.dirichlet(np.full(int(np.prod(sizes)), 0.5)).reshape(sizes)
    targets = []
    for scope in scopes:
        marginal = joint.sum(axis=tuple(v for v in range(len(sizes)) if v not in scope))
        targets.append(Target(scope, marginal + rng.normal(0, 0.03, marginal.shape)))
    return targets


@pytest.mark.parametrize("sizes, scopes", [
    ((2, 3, 2), [(0,), (1,), (2,), (0, 1), (1, 2)]),
    ((3, 2, 2, 3), [(0, 1), (1, 2), (2, 3), (0, 3)]),  # a cycle: the pricing DP runs on a width-2 tree
    ((2, 2, 3, 2), [(0, 1, 2), (2, 3), (3,)]),
])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_column_generation_reaches_the_full_domain_optimum(sizes, scopes, seed):
    targets = _noisy_targets(sizes, scopes, seed)
    solution = solve(sizes, targets, max_iterations=500)
    assert solution.converged
    assert solution.max_error == pytest.approx(_full_domain_optimum(sizes, targets), abs=1e-7)
    assert solution.weights.sum() == pytest.approx(1.0) and (solution.weights > 0).all()
    # the reported optimum is the real largest deviation of the returned distribution
    deviation = 0.0
    for t in targets:
        fitted = np.zeros(t.values.shape)
        for x, w in zip(solution.points, solution.weights):
            fitted[tuple(x[list(t.scope)])] += w
        deviation = max(deviation, np.abs(fitted - t.values).max())
    assert deviation == pytest.approx(solution.max_error, abs=1e-7)


def test_consistent_targets_are_matched_exactly_by_a_sparse_distribution():
    sizes, scopes = (3, 3, 3), [(0, 1), (1, 2)]
    rng = np.random.default_rng(5)
    joint = rng.dirichlet(np.ones(27)).reshape(sizes)
    targets = [Target(s, joint.sum(axis=tuple(v for v in range(3) if v not in s))) for s in scopes]
    solution = solve(sizes, targets, max_iterations=500)
    assert solution.max_error == pytest.approx(0.0, abs=1e-9)
    assert len(solution.points) <= sum(t.values.size for t in targets) + 1  # a basic solution is sparse


# ---- the engine in LP mode -------------------------------------------------------------------

def test_lp_mode_fits_exact_answers_and_spends_the_budget_exactly():
    import math

    import pandas as pd

    from spark_synth.engines import LocalTaskRunner, get_engine
    from spark_synth.measure import answer_frame
    from spark_synth.oracle import oracle_over_frame
    from spark_synth.privacy import PrivacyBudget, PrivacyFilter
    from spark_synth.queries import MarginalQuery
    from spark_synth.schema import schema_from_dict

    from ..helpers import exact_fit

    rng = np.random.default_rng(0)
    a = rng.integers(0, 3, 3000)
    b = (a + rng.integers(0, 2, 3000)) % 3
    schema = schema_from_dict({"columns": [
        {"name": "a", "type": "categorical", "categories": ["x", "y", "z"], "nullable": False},
        {"name": "b", "type": "integer", "min": 0, "max": 40, "nullable": False},
        {"name": "c", "type": "categorical", "categories": ["p", "q"]}]})
    frame = pd.DataFrame({"a": np.array(["x", "y", "z"])[a], "b": b * 13, "c": np.where(rng.random(3000) < 0.3, "p", "q")})
    model = exact_fit(get_engine("fpt", mode="lp", numeric_groups=4), schema, frame)
    summary = model.fit_summary()
    assert summary["lp_converged"] and summary["lp_max_error"] < 1e-6
    codes = model.sample_codes(50_000, np.random.default_rng(1))
    exact = answer_frame(frame, schema, [MarginalQuery(("a", "b"))])[0].astype(float)
    sampled = np.zeros_like(exact)
    np.add.at(sampled, (codes[:, 0], codes[:, 1]), 1.0)
    assert 0.5 * np.abs(exact / exact.sum() - sampled / sampled.sum()).sum() < 0.02  # fine codes refined within groups

    privacy_filter = PrivacyFilter(PrivacyBudget(1.0, 1e-9))
    get_engine("fpt", mode="lp").fit(schema, oracle_over_frame(frame, schema, privacy_filter), LocalTaskRunner())
    report = privacy_filter.report()
    assert math.isclose(report.rho_spent, PrivacyBudget(1.0, 1e-9).rho, rel_tol=1e-9) and not report.selections

    with pytest.raises(Exception, match="fpt.lp_max_cells"):
        exact_fit(get_engine("fpt", mode="lp", lp_max_cells=10), schema, frame)


def test_lp_mode_with_one_way_workload_measures_each_column_once():
    """max_way=1 (issue 45: crashed on a grouped numeric column's histogram): the workload is the
    1-ways already measured, so each column is measured once and the LP fits them."""
    import pandas as pd

    from spark_synth.engines import LocalTaskRunner, get_engine
    from spark_synth.oracle import oracle_over_frame
    from spark_synth.privacy import PrivacyBudget, PrivacyFilter
    from spark_synth.schema import schema_from_dict

    rng = np.random.default_rng(2)
    schema = schema_from_dict({"columns": [
        {"name": "a", "type": "categorical", "categories": ["x", "y", "z"], "nullable": False},
        {"name": "b", "type": "integer", "min": 0, "max": 400, "nullable": False}]})
    frame = pd.DataFrame({"a": rng.choice(["x", "y", "z"], 2000), "b": rng.integers(0, 401, 2000)})
    privacy_filter = PrivacyFilter(PrivacyBudget(1.0, 1e-9))
    model = get_engine("fpt", mode="lp", max_way=1).fit(schema, oracle_over_frame(frame, schema, privacy_filter), LocalTaskRunner())
    assert [e.name for e in privacy_filter.report().measurements] == ["1-way[a]", "1-way[b]"]
    codes = model.sample_codes(1000, np.random.default_rng(0))
    assert codes.shape == (1000, 2) and codes[:, 1].max() < schema["b"].size
