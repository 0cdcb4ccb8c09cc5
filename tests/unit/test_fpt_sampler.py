"""FPT's NumPy sampler (engines/fpt/draws.py) against brute force and the torch sampler: exact
calibration, exact draws, rounded counts, and a fitted model that samples without importing torch."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from scipy import stats
from scipy.special import logsumexp

import spark_synth.engines.fpt.draws as draws_module
from spark_synth.engines import get_engine
from spark_synth.engines.fpt.code_shares import ABSENT
from spark_synth.engines.fpt.graphical import GibbsModel, JunctionTree
from spark_synth.engines.fpt.model import FptModel
from spark_synth.engines.fpt.draws import TreeSampler, TreeStructure
from spark_synth.schema import schema_from_dict

from ..helpers import exact_fit

REPO_ROOT = Path(__file__).resolve().parents[2]

STRUCTURES = {  # name → (number of variables, scopes)
    "chain": (5, [(0, 1), (1, 2), (2, 3), (3, 4)]),
    "star": (5, [(0, 1), (0, 2), (0, 3), (0, 4)]),
    "triples": (6, [(0, 1, 2), (1, 2, 3), (2, 3, 4), (4, 5)]),  # bags of 3 variables, 2-variable separators
    "cycle": (5, [(0, 1), (1, 2), (2, 3), (0, 3), (3, 4)]),  # min-fill adds an edge: bags of 3
    "forest": (6, [(0, 1), (2, 3), (3, 4), (1,)]),  # two components (an empty separator) and a variable in no scope
}


def _model(name, seed, kind="plain"):
    """Random sizes (2–3) and log-potential tables. ``offset``: tables shifted by thousands (p unchanged;
    exp would overflow) and each variable's one code ABSENT (−1e4) somewhere; ``extreme``: scale 900."""
    rng = np.random.default_rng([seed, list(STRUCTURES).index(name)])
    d, scopes = STRUCTURES[name]
    sizes = [int(s) for s in rng.integers(2, 4, d)]
    scale = 900.0 if kind == "extreme" else 1.5
    tables = {s: scale * rng.standard_normal([sizes[v] for v in s]) for s in scopes}
    if kind == "offset":
        for k, scope in enumerate(scopes):
            tables[scope] += (5000.0, -4000.0, 3000.0)[k % 3]
        for v in range(d):
            scope = next((s for s in scopes if v in s), None)
            if scope is not None and v % 2 == 0:  # as the fit masks a column's code without mass
                index = [slice(None)] * len(scope)
                index[scope.index(v)] = sizes[v] - 1
                tables[scope][tuple(index)] = ABSENT
    return sizes, tables


def _log_joint(sizes, tables):
    """Σ_c θ_c(x_c) over the whole domain, axes 0..d-1 (brute force)."""
    total = np.zeros(sizes)
    for scope, table in tables.items():
        total = total + table.reshape([sizes[v] if v in scope else 1 for v in range(len(sizes))])
    return total


def _joint(sizes, tables):
    log = _log_joint(sizes, tables)
    return np.exp(log - logsumexp(log))


def _marginal(joint, scope):
    return joint.sum(axis=tuple(v for v in range(joint.ndim) if v not in scope))


def _sampler(sizes, tables):
    return TreeSampler.from_potentials(TreeStructure.min_fill(sizes, tables), tables)


def _counts(rows, sizes, scope=None):
    scope = tuple(range(len(sizes))) if scope is None else scope
    counts = np.zeros([sizes[v] for v in scope])
    np.add.at(counts, tuple(rows[:, v] for v in scope), 1)
    return counts


def _chi2_pvalue(counts, expected):
    """χ² goodness of fit of joint counts, cells expected below 5 pooled into one (and no count may
    fall where the model has no mass)."""
    counts, expected = counts.ravel(), expected.ravel()
    assert counts[expected == 0].sum() == 0
    small = expected < 5
    observed = np.append(counts[~small], counts[small].sum())
    wanted = np.append(expected[~small], expected[small].sum())
    keep = wanted > 0
    return stats.chisquare(observed[keep], wanted[keep] * observed.sum() / wanted[keep].sum()).pvalue


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_tree_is_the_fits_junction_tree(name):
    """The same rooted decomposition as graphical.JunctionTree (so the same strata as the torch
    sampler); if graphical changes how it builds its tree, TreeStructure.min_fill should follow."""
    d, scopes = STRUCTURES[name]
    sizes = [2 + v % 3 for v in range(d)]
    tree, fits = TreeStructure.min_fill(sizes, scopes), JunctionTree(sizes, scopes)
    assert tree.bags == fits.bags and list(tree.parents) == fits.parent and tree.separators == fits.separators
    assert tree.width == fits.width


@pytest.mark.parametrize("kind", ["plain", "offset", "extreme"])
@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_calibration_matches_brute_force(name, kind):
    sizes, tables = _model(name, 0, kind)
    sampler, log_joint = _sampler(sizes, tables), _log_joint(sizes, tables)
    joint = np.exp(log_joint - logsumexp(log_joint))
    assert sampler.log_partition == pytest.approx(float(logsumexp(log_joint)), rel=1e-13, abs=1e-10)
    for i, bag in enumerate(sampler.tree.bags):
        marginal = sampler.bag_marginal(i)
        assert marginal.shape == tuple(sizes[v] for v in bag) and np.isfinite(marginal).all()
        np.testing.assert_allclose(marginal, _marginal(joint, bag), rtol=0, atol=1e-12)
        assert np.all(marginal[_marginal(joint, bag) == 0] == 0)  # ABSENT codes: exactly no mass
    rows = sampler.sample(2000, np.random.default_rng(0))
    assert rows.dtype == np.int64 and rows.shape == (2000, len(sizes))
    assert joint[tuple(rows.T)].min() > 1e-12  # never a vanishing configuration


@pytest.mark.parametrize("kind", ["plain", "offset"])
@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_rows_follow_the_exact_joint(name, kind):
    sizes, tables = _model(name, 1, kind)
    joint = _joint(sizes, tables)
    n = 20_000
    rows = _sampler(sizes, tables).sample(n, np.random.default_rng(1))
    assert _chi2_pvalue(_counts(rows, sizes), n * joint) > 1e-4
    assert 0.5 * np.abs(_counts(rows, sizes) / n - joint).sum() < 0.03


def test_each_row_is_an_exact_draw_whatever_its_position():
    """Over many seeds, every row position's (whole) configuration is distributed as p, across bags:
    the strata must not favour a row by its position or its separator group."""
    sizes, tables = [2, 3, 2], {(0, 1): np.array([[0.3, -1.0, 1.2], [0.0, 0.8, -0.4]]),
                                (1, 2): np.array([[1.0, -1.0], [-0.5, 0.5], [0.2, 0.9]])}
    joint, sampler = _joint(sizes, tables), _sampler(sizes, tables)
    seeds, n = 4000, 5
    hits = np.zeros((n, joint.size))
    for seed in range(seeds):
        rows = sampler.sample(n, np.random.default_rng(seed))
        hits[np.arange(n), np.ravel_multi_index(tuple(rows.T), sizes)] += 1
    for position in range(n):
        assert _chi2_pvalue(hits[position], seeds * joint.ravel()) > 1e-4, position


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_numpy_and_torch_samplers_draw_the_same_distribution(name):
    sizes, tables = _model(name, 2, "offset")
    joint, n = _joint(sizes, tables), 20_000
    ours = _counts(_sampler(sizes, tables).sample(n, np.random.default_rng(2)), sizes)
    torchs = _counts(GibbsModel(JunctionTree(sizes, tables), tables).sample(n, 2).numpy(), sizes)
    for counts in (ours, torchs):
        assert _chi2_pvalue(counts, n * joint) > 1e-4
    assert 0.5 * np.abs(ours - torchs).sum() / n < 0.04


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_every_bags_counts_are_its_expected_counts_rounded(name, monkeypatch):
    """The root bag is one stratum: each cell's count is n·p rounded. Every other bag is drawn in
    strata of its separator's value: its counts stay within a few rows of n·p. I.i.d. uniforms in
    their place miss by ~√(n p) rows (the check can fail)."""
    sizes, tables = _model(name, 3, "offset")
    joint, n = _joint(sizes, tables), 200_000
    sampler = _sampler(sizes, tables)

    def worst_miss():
        rows = sampler.sample(n, np.random.default_rng(3))
        return [np.abs(_counts(rows, sizes, bag) - n * _marginal(joint, bag)).max() for bag in sampler.tree.bags]

    misses = worst_miss()
    assert misses[0] <= 1.0 + 1e-6
    assert max(misses) <= 6.0, misses
    monkeypatch.setattr(draws_module, "stratified_uniforms", lambda size, rng, groups=None: rng.random(size))
    assert max(worst_miss()) > 20.0


def test_bad_trees_and_tables_are_refused():
    with pytest.raises(ValueError, match="earlier bag"):
        TreeStructure([2, 2], [(0, 1), (1,)], [-1, 1])
    with pytest.raises(ValueError, match="connected"):
        TreeStructure([2, 2, 2], [(0, 1), (1, 2), (0, 2)], [-1, 0, 1])  # variable 0's bags are apart
    with pytest.raises(ValueError, match="connected"):
        TreeStructure([2, 2, 2], [(0, 1)], [-1])  # variable 2 in no bag
    tree = TreeStructure.min_fill([2, 3, 2], [(0, 1), (1, 2)])
    with pytest.raises(ValueError, match="not covered"):
        TreeSampler.from_potentials(tree, {(0, 2): np.zeros((2, 2))})
    with pytest.raises(ValueError, match="shape"):
        TreeSampler.from_potentials(tree, {(0, 1): np.zeros((3, 2))})
    with pytest.raises(ValueError, match="finite"):
        TreeSampler.from_potentials(tree, {(0, 1): np.full((2, 3), np.nan)})
    assert TreeSampler.from_potentials(tree, {}).sample(0, np.random.default_rng(0)).shape == (0, 3)


# ---- the fitted model ---------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fitted():
    """A quick noise-free fit: a target, correlated columns, a nullable column without nulls (its null
    code gets log-potential ABSENT) and a wide numeric column (coarsened, refined when sampled)."""
    rng = np.random.default_rng(0)
    n = 3000
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(0, 2, n)) % 4
    c = np.where(rng.random(n) < 0.8, b % 3, rng.integers(0, 3, n))
    schema = schema_from_dict({"target": "y", "task": "classification", "columns": [
        {"name": "a", "type": "categorical", "categories": ["a0", "a1", "a2", "a3"], "nullable": False},
        {"name": "b", "type": "ordinal", "categories": [0, 1, 2, 3], "nullable": False},
        {"name": "c", "type": "categorical", "categories": ["x", "y", "z"], "nullable": True},
        {"name": "age", "type": "integer", "min": 0, "max": 99, "nullable": False},
        {"name": "y", "type": "categorical", "categories": ["no", "yes"], "nullable": False}]})
    frame = pd.DataFrame({"a": [f"a{v}" for v in a], "b": b, "c": np.array(["x", "y", "z"])[c],
                          "age": np.clip(20 + 10 * a + rng.integers(0, 30, n), 0, 99),
                          "y": np.where((a + c) % 3 == 0, "yes", "no")})
    model = exact_fit(get_engine("fpt", rounds_per_column=1.0, iterations=20, final_iterations=40), schema, frame)
    return schema, model


def test_fitted_model_keeps_numpy_tables_and_the_fits_tree(fitted):
    _, model = fitted
    assert all(type(t) is np.ndarray and t.dtype == np.float64 for t in model.potentials.values())
    assert any((t == ABSENT).any() for t in model.potentials.values())  # c's null code has no mass
    gibbs, sampler = model.gibbs(), model.sampler()
    assert model.width == gibbs.tree.width and sampler.tree.bags == gibbs.tree.bags
    assert sampler.log_partition == pytest.approx(gibbs.log_partition, rel=1e-12)
    for i in range(len(gibbs.tree.bags)):
        np.testing.assert_allclose(sampler.bag_marginal(i), gibbs.belief(i).numpy(), rtol=0, atol=1e-12)


def test_state_round_trip_samples_the_same_distribution(fitted):
    schema, model = fitted
    state = json.loads(json.dumps(model.to_state()))  # the saved format: plain lists
    assert all(isinstance(t, list) for _, t in state["potentials"])
    again = FptModel.from_state(state, schema)
    assert np.array_equal(again.sample_codes(3000, np.random.default_rng(4)), model.sample_codes(3000, np.random.default_rng(4)))
    n, gibbs = 100_000, model.gibbs()  # the restored model's rows against the original's exact bag marginals
    rows = again.sampler().sample(n, np.random.default_rng(5))
    for i, bag in enumerate(gibbs.tree.bags):
        expected = n * gibbs.belief(i).numpy()
        assert np.abs(_counts(rows, again.sizes, bag) - expected).max() <= 6.0, bag


def test_a_pickled_model_samples_in_a_process_that_never_imports_torch(fitted, tmp_path):
    """What Spark ships to its Python workers (the sampling closure, pickled by cloudpickle, after the
    driver used the model: its caches, torch's included, must not travel) unpickles and samples with
    NumPy only — the same rows as here."""
    from pyspark import cloudpickle

    from spark_synth.sample.generate import _partition_sampler
    from spark_synth.sample.plan import sampling_plan

    schema, model = fitted
    model.gibbs(), model.sample_codes(10, np.random.default_rng(0))
    (tmp_path / "closure.pkl").write_bytes(cloudpickle.dumps(_partition_sampler(sampling_plan(model, schema, 10), schema, 0, ())))
    (tmp_path / "model.pkl").write_bytes(cloudpickle.dumps(model))
    code = f"""
import inspect, pickle, sys
import numpy as np
folder = {str(tmp_path)!r}
sample = pickle.loads(open(folder + "/closure.pkl", "rb").read())
model = pickle.loads(open(folder + "/model.pkl", "rb").read())
assert inspect.getclosurevars(sample).nonlocals["plan"].model.sample_codes(500, np.random.default_rng(6)).shape == (500, 5)
np.save(folder + "/codes.npy", model.sample_codes(4000, np.random.default_rng(6)))
assert "torch" not in sys.modules, "torch imported"
assert "networkx" not in sys.modules, "the tree was rebuilt on the worker"
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert np.array_equal(np.load(tmp_path / "codes.npy"), model.sample_codes(4000, np.random.default_rng(6)))


def test_the_package_loads_the_engine_only_when_asked():
    code = """
import sys
from spark_synth.engines.fpt import FptModel, FptConfig
assert "torch" not in sys.modules and "spark_synth.engines.fpt.engine" not in sys.modules
from spark_synth.engines.fpt import FptEngine
assert FptEngine.model_class is FptModel and "torch" in sys.modules
"""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
