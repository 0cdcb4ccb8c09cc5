"""FPT graphical model: junction tree, calibration, marginals, sampler and max-sum against brute force."""

import itertools

import numpy as np
import pytest
import torch
from scipy import stats

from spark_synth.engines.fpt.graphical import GibbsModel, JunctionTree, max_sum

STRUCTURES = {  # name → (number of variables, scopes)
    "chain": (5, [(0, 1), (1, 2), (2, 3), (3, 4), (2,)]),
    "tree": (6, [(0, 1), (0, 2), (1, 3), (1, 4), (2, 5)]),
    "cycle": (5, [(0, 1), (1, 2), (2, 3), (0, 3), (3, 4)]),
    "grid": (6, [(0, 1), (1, 2), (0, 3), (1, 4), (2, 5), (3, 4), (4, 5)]),
    "triple_isolated": (7, [(0, 1, 2), (2, 3), (3, 4), (1, 4), (5,)]),  # variable 6 is in no scope
}


def _random_model(name, seed, scale=1.0):
    generator = torch.Generator().manual_seed(seed)
    d, scopes = STRUCTURES[name]
    sizes = [int(s) for s in torch.randint(2, 5, (d,), generator=generator)]
    tables = {s: scale * torch.randn([sizes[v] for v in s], generator=generator, dtype=torch.float64) for s in scopes}
    return sizes, tables


def _full_log_table(sizes, tables):
    """Σ_c θ_c(x_c) over the whole (brute-force) domain, axes 0..d-1."""
    total = torch.zeros(sizes, dtype=torch.float64)
    for scope, table in tables.items():
        shape = [sizes[v] if v in scope else 1 for v in range(len(sizes))]
        total = total + table.reshape(shape)
    return total


def _brute_marginal(joint, scope):
    dims = tuple(v for v in range(joint.dim()) if v not in scope)
    return joint.sum(dim=dims) if dims else joint  # sum(dim=()) would sum over everything


@pytest.mark.parametrize("name", sorted(STRUCTURES))
@pytest.mark.parametrize("seed", [0, 1])
def test_partition_and_marginals_match_brute_force(name, seed):
    sizes, tables = _random_model(name, seed, scale=1.5)
    model = GibbsModel(JunctionTree(sizes, tables), tables).calibrate()
    log_table = _full_log_table(sizes, tables)
    joint = (log_table - torch.logsumexp(log_table.reshape(-1), 0)).exp()
    assert model.log_partition == pytest.approx(float(torch.logsumexp(log_table.reshape(-1), 0)), abs=1e-10)
    for bag, belief in zip(model.tree.bags, model.log_beliefs):
        torch.testing.assert_close(belief.exp(), _brute_marginal(joint, bag), rtol=0, atol=1e-10)
    d = len(sizes)
    scopes = [(v,) for v in range(d)] + list(itertools.combinations(range(d), 2))
    scopes += list(itertools.combinations(range(d), 3))[::3] + [tuple(range(d)), ()]
    for scope in scopes:
        torch.testing.assert_close(model.marginal(scope), _brute_marginal(joint, scope), rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_extreme_potentials_keep_every_table_finite_and_exact(name):
    """Log-potentials spanning thousands (cells far below 1e-308 of the mode): the downward pass sums
    separator marginals in probability space, and must still give finite, exact beliefs and a sampler
    that never draws a vanishing configuration."""
    sizes, tables = _random_model(name, 3, scale=900.0)
    model = GibbsModel(JunctionTree(sizes, tables), tables).calibrate()
    log_table = _full_log_table(sizes, tables)
    joint = (log_table - torch.logsumexp(log_table.reshape(-1), 0)).exp()
    for bag, belief in zip(model.tree.bags, model.log_beliefs):
        assert not torch.isnan(belief).any()
        torch.testing.assert_close(belief.exp(), _brute_marginal(joint, bag), rtol=0, atol=1e-10)
    rows = model.sample(500, 0)
    assert float(joint[tuple(rows.T)].min()) > 1e-12

def test_marginal_rejects_unsorted_scopes_and_uncovered_potentials():
    sizes, tables = _random_model("chain", 0)
    tree = JunctionTree(sizes, tables)
    with pytest.raises(ValueError):
        GibbsModel(tree, tables).marginal((2, 1))
    with pytest.raises(ValueError):
        GibbsModel(tree, {(0, 4): torch.zeros(sizes[0], sizes[4])})
    for bad in (float("inf"), float("nan")):
        table = tables[(1, 2)].clone()
        table[0, 1] = bad
        with pytest.raises(ValueError, match="finite"):
            GibbsModel(tree, {**tables, (1, 2): table})
    with pytest.raises(ValueError, match="shape"):
        GibbsModel(tree, {(1, 2): torch.zeros(sizes[2], sizes[1] + 1)})


def _chi_square_p_value(samples, probabilities):
    """Goodness of fit of full-joint cell counts, cells with expected count < 5 merged into one."""
    n = len(samples)
    flat = np.ravel_multi_index(tuple(samples.T), probabilities.shape)
    observed = np.bincount(flat, minlength=probabilities.size).astype(float)
    expected = n * probabilities.reshape(-1)
    small = expected < 5
    observed = np.append(observed[~small], observed[small].sum())
    expected = np.append(expected[~small], expected[small].sum())
    if expected[-1] < 5:  # merged remainder still too small: fold it into the smallest kept cell
        k = np.argmin(expected[:-1])
        observed[k] += observed[-1]
        expected[k] += expected[-1]
        observed, expected = observed[:-1], expected[:-1]
    return stats.chisquare(observed, expected).pvalue


@pytest.mark.parametrize("name", ["cycle", "triple_isolated"])
def test_sampler_fits_the_exact_joint_and_rejects_a_perturbed_one(name):
    sizes, tables = _random_model(name, 3)
    model = GibbsModel(JunctionTree(sizes, tables), tables)
    samples = model.sample(20_000, torch.Generator().manual_seed(11))
    assert samples.shape == (20_000, len(sizes)) and samples.dtype == torch.int64
    assert all(int(samples[:, v].max()) < s for v, s in enumerate(sizes)) and int(samples.min()) >= 0
    samples = samples.numpy()

    def joint(tables):
        log_table = _full_log_table(sizes, tables)
        return (log_table - torch.logsumexp(log_table.reshape(-1), 0)).exp().numpy()

    assert _chi_square_p_value(samples, joint(tables)) > 1e-4
    perturbed = dict(tables)
    scope = next(iter(tables))
    perturbed[scope] = tables[scope].clone()
    perturbed[scope].view(-1)[int(model.marginal(scope).argmax())] += 1.0  # the scope's likeliest cell
    assert _chi_square_p_value(samples, joint(perturbed)) < 1e-6


def test_sampler_is_reproducible_from_its_seed():
    sizes, tables = _random_model("grid", 2)
    model = GibbsModel(JunctionTree(sizes, tables), tables)
    assert torch.equal(model.sample(50, 7), model.sample(50, torch.Generator().manual_seed(7)))


@pytest.mark.parametrize("name", sorted(STRUCTURES))
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_max_sum_matches_brute_force(name, seed):
    sizes, weights = _random_model(name, 10 + seed, scale=3.0)  # standard normal weights: many negative
    value, assignment = max_sum(JunctionTree(sizes, weights), weights)
    table = _full_log_table(sizes, weights)
    assert value == pytest.approx(float(table.max()), abs=1e-10)
    assert tuple(assignment) == tuple(int(i) for i in np.unravel_index(int(table.argmax()), sizes))


def test_max_sum_with_fewer_weights_than_the_tree_scopes():
    sizes, weights = _random_model("grid", 5)
    tree = JunctionTree(sizes, weights)
    weights = {(1, 4): -weights[(1, 4)], (5,): torch.tensor([-1.0, -2.0, -0.5, -3.0][: sizes[5]], dtype=torch.float64)}
    value, assignment = max_sum(tree, weights)
    table = _full_log_table(sizes, weights)
    assert value == pytest.approx(float(table.max()), abs=1e-12)
    assert float(table[tuple(assignment)]) == pytest.approx(value, abs=1e-12)


def test_width_and_bag_cells():
    sizes = [3, 3, 3, 3]
    chain = [(0, 1), (1, 2), (2, 3)]
    tree = JunctionTree(sizes, chain)
    assert tree.width == 1 and tree.largest_bag_cells == 9 and len(tree.bags) == 3
    assert tree.parent[0] == -1 and all(0 <= p < i for i, p in enumerate(tree.parent) if i)
    cycle = JunctionTree(sizes, [*chain, (0, 3)])
    assert cycle.width == 2 and cycle.largest_bag_cells == 27
    assert JunctionTree.bag_cells_if_added(sizes, chain, (0, 3)) == 27
    assert JunctionTree.bag_cells_if_added(sizes, chain, (1, 2)) == 9
    isolated = JunctionTree([2, 5, 4], [(0, 1)])
    assert isolated.width == 1 and isolated.largest_bag_cells == 10 and (2,) in isolated.bags


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_largest_bag_if_added_equals_a_new_decomposition(name):
    """The shortcut (scope's pairs already edges: the tree's own largest bag) changes no answer."""
    sizes, tables = _random_model(name, seed=2)
    sizes = [s + v for v, s in enumerate(sizes)]  # unequal sizes, so bags differ in cells
    tree = JunctionTree(sizes, list(tables))
    d = len(sizes)
    for scope in [(v,) for v in range(d)] + list(itertools.combinations(range(d), 2)) + list(itertools.combinations(range(d), 3)):
        assert tree.largest_bag_if_added(scope) == JunctionTree.bag_cells_if_added(sizes, list(tables), scope), scope


def test_every_bag_is_a_sorted_tuple_and_every_scope_is_covered():
    for d, scopes in STRUCTURES.values():
        tree = JunctionTree([2] * d, scopes)
        assert all(list(bag) == sorted(bag) for bag in tree.bags)
        assert set().union(*tree.bags) == set(range(d))
        assert all(tree.bag_containing(scope) is not None for scope in scopes)


@pytest.mark.skipif(not torch.cuda.is_available(), reason="no CUDA device")
def test_cuda_matches_cpu():
    sizes, tables = _random_model("triple_isolated", 4)
    tree = JunctionTree(sizes, tables)
    cpu, cuda = GibbsModel(tree, tables).calibrate(), GibbsModel(tree, tables, device="cuda").calibrate()
    assert cuda.log_partition == pytest.approx(cpu.log_partition, abs=1e-10)
    torch.testing.assert_close(cuda.marginal((0, 5, 6)).cpu(), cpu.marginal((0, 5, 6)), rtol=0, atol=1e-10)
    samples = cuda.sample(1000, 3)
    assert samples.device.type == "cuda" and samples.shape == (1000, len(sizes))
    assert max_sum(tree, tables, device="cuda") == pytest.approx(max_sum(tree, tables))


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_marginal_cells_bounds_every_table_the_marginal_builds(name, monkeypatch):
    """The public size estimate is the largest table marginal() really builds (no table larger)."""
    import spark_synth.engines.fpt.graphical as graphical

    sizes, tables = _random_model(name, seed=3)
    model = GibbsModel(JunctionTree(sizes, list(tables)), tables).calibrate()
    built = []
    original = graphical._product

    def recording(factors):
        variables, table = original(factors)
        built.append(table.numel())
        return variables, table

    monkeypatch.setattr(graphical, "_product", recording)
    for scope in itertools.combinations(range(len(sizes)), 2):
        built.clear()
        model.marginal(scope)
        bound = model.tree.marginal_cells(scope)
        assert max(built, default=0) <= bound
        if model.tree.bag_containing(scope) is None:
            assert max(built) == bound


@pytest.mark.parametrize("name", sorted(STRUCTURES))
@pytest.mark.parametrize("seed", [0, 1])
def test_batched_marginals_equal_one_by_one_and_brute_force(name, seed):
    """marginals() carries p(u, x_bag) along the paths of pairs in no common bag, shared by pairs
    with the same u: every table must equal marginal()'s and the brute-force joint's, in order."""
    sizes, tables = _random_model(name, seed, scale=1.5)
    model = GibbsModel(JunctionTree(sizes, tables), tables).calibrate()
    log_table = _full_log_table(sizes, tables)
    joint = (log_table - torch.logsumexp(log_table.reshape(-1), 0)).exp()
    d = len(sizes)
    scopes = list(itertools.combinations(range(d), 2))[::-1] + [(0,), tuple(range(min(d, 3)))] + [(0, 1)]
    assert any(model.tree.bag_containing(s) is None for s in scopes)  # some pairs cross bags
    for scope, table in zip(scopes, model.marginals(scopes), strict=True):
        torch.testing.assert_close(table, model.marginal(scope), rtol=0, atol=1e-12)
        torch.testing.assert_close(table, _brute_marginal(joint, scope), rtol=0, atol=1e-10)


@pytest.mark.parametrize("name", sorted(STRUCTURES))
def test_float32_calibration_stays_finite_and_close_to_float64(name):
    """The fit calibrates in float32 (``fit_precision``): beliefs within float32's precision of the
    float64 ones, and finite even where cells fall below float32's smallest number."""
    sizes, tables = _random_model(name, 4, scale=1.5)
    tree = JunctionTree(sizes, tables)
    exact = GibbsModel(tree, tables).calibrate()
    bags = GibbsModel(tree, tables).log_potentials
    single = GibbsModel.from_log_potentials(tree, [t.float() for t in bags]).calibrate()
    for k in range(len(tree.bags)):
        assert single.belief(k).dtype == torch.float32
        torch.testing.assert_close(single.belief(k).double(), exact.belief(k), rtol=0, atol=1e-5)
    pairs = list(itertools.combinations(range(len(sizes)), 2))
    for got, want in zip(single.marginals(pairs), exact.marginals(pairs)):
        torch.testing.assert_close(got.double(), want, rtol=0, atol=1e-5)
    sizes, tables = _random_model(name, 3, scale=900.0)  # cells far below 1e-38 of the mode
    tree = JunctionTree(sizes, tables)
    extreme = GibbsModel.from_log_potentials(tree, [t.float() for t in GibbsModel(tree, tables).log_potentials]).calibrate()
    assert all(torch.isfinite(belief).all() for belief in extreme.log_beliefs)
    assert all(float(extreme.belief(k).sum()) == pytest.approx(1.0, abs=1e-4) for k in range(len(tree.bags)))
