"""Stratified sampling: every row an exact draw, every count its expected count rounded."""

import numpy as np
import pytest
import torch

from spark_synth.engines.fpt.graphical import GibbsModel, JunctionTree
from spark_synth.engines.fpt.model import _refine
from spark_synth.engines.independent import IndependentModel
from spark_synth.engines.splice.model import SpliceModel
from spark_synth.engines.stratified import stratified_choice, stratified_uniforms


def test_every_row_is_an_exact_draw_whatever_its_position_and_group():
    """Over many seeds, each row position's value is distributed ∝ weights (a rank taken from the
    row's position instead of a random permutation would give row 0 the first outcome too often)."""
    weights = np.array([0.1, 0.2, 0.7])
    groups = np.array([0, 0, 0, 1, 1, 2, 0])
    seeds = 20_000
    hits = np.zeros((len(groups), len(weights)))
    for seed in range(seeds):
        rng = np.random.default_rng(seed)
        u = stratified_uniforms(len(groups), rng, groups)
        assert np.all((u >= 0) & (u < 1))
        hits[np.arange(len(groups)), np.searchsorted(np.cumsum(weights), u, side="right")] += 1
    tolerance = 5 * np.sqrt(weights * (1 - weights) / seeds)
    assert np.all(np.abs(hits / seeds - weights) < tolerance)


def test_counts_within_each_group_are_the_expected_counts_rounded():
    rng = np.random.default_rng(3)
    groups = rng.integers(0, 5, size=10_000)
    weights = np.array([0.05, 0.15, 0.3, 0.5])
    u = stratified_uniforms(len(groups), rng, groups)
    draws = np.searchsorted(np.cumsum(weights), u, side="right")
    for g in range(5):
        counts = np.bincount(draws[groups == g], minlength=len(weights))
        assert np.all(np.abs(counts - (groups == g).sum() * weights) < 1.0)
    iid = np.searchsorted(np.cumsum(weights), rng.random(len(groups)), side="right")  # what the rounding removes
    assert np.abs(np.bincount(iid, minlength=4) - len(groups) * weights).max() > 1.0


def test_bad_groups_and_empty_draws():
    rng = np.random.default_rng(0)
    assert stratified_uniforms(0, rng).shape == (0,)
    for bad in (np.zeros(2, dtype=int), np.zeros(3), np.array([0, -1, 2])):
        with pytest.raises(ValueError, match="groups must be 3 non-negative integers"):
            stratified_uniforms(3, rng, bad)
    for wide in (np.array([5, 10**12, 5, 70_000, 10**12, 70_000]), np.array([5, 70_001, 5, 70_000, 70_001, 70_000])):
        u = stratified_uniforms(6, rng, wide)  # large keys are renumbered, not misgrouped: pairs (k + U)/2
        for key in set(wide.tolist()):
            spread = np.sort(u[wide == key]) * 2 % 1
            assert np.isclose(spread[0], spread[1])
    assert set(stratified_choice(np.array([0.0, 1.0, 0.0]), 50, rng)) == {1}  # zero weights never drawn


def test_fpt_sampler_rounds_every_bags_counts():
    """Chain x0 - x1 - x2: bag {0, 1} is drawn whole, bag {1, 2} given x1; both bags' counts stay within
    a few rows of n · p (i.i.d. draws miss by ~√(n p), here tens of rows)."""
    generator = torch.Generator().manual_seed(0)
    sizes = [3, 4, 3]
    tables = {(0, 1): torch.randn(3, 4, generator=generator, dtype=torch.float64),
              (1, 2): torch.randn(4, 3, generator=generator, dtype=torch.float64)}
    model = GibbsModel(JunctionTree(sizes, tables), tables)
    n = 20_000
    samples = model.sample(n, 5).numpy()
    for scope in tables:
        counts = np.zeros([sizes[v] for v in scope])
        np.add.at(counts, tuple(samples[:, v] for v in scope), 1)
        assert np.abs(counts - n * model.marginal(scope).numpy()).max() <= 1.0 + max(sizes)


def test_independent_and_splice_models_round_their_counts():
    rng = np.random.default_rng(1)
    p = np.array([0.12, 0.33, 0.55])
    codes = IndependentModel([p, p[::-1]], 1000.0).sample_codes(9_999, rng)
    for j, q in enumerate([p, p[::-1]]):
        assert np.all(np.abs(np.bincount(codes[:, j], minlength=3) - 9_999 * q) < 1.0)
    weights = np.array([0.25, 0.75])
    table = np.array([[0.5, 0.5, 0.0], [0.1, 0.2, 0.7]])
    codes = SpliceModel(weights, [table], 1000.0).sample_codes(8_000, rng)
    expected = 8_000 * weights @ table
    assert np.all(np.abs(np.bincount(codes[:, 0], minlength=3) - expected) <= 3.0)


def test_fpt_refinement_rounds_within_each_group():
    """A sampled group becomes a fine code ∝ the 1-way distribution restricted to the group."""
    rng = np.random.default_rng(2)
    grouping = np.array([0, 0, 1, 1, 1])
    fine = np.array([0.1, 0.3, 0.2, 0.2, 0.2])
    groups = rng.integers(0, 2, size=6_000)
    codes = _refine(groups, grouping, fine, rng)
    assert np.array_equal(grouping[codes], groups)
    for g, members in ((0, [0, 1]), (1, [2, 3, 4])):
        m = (groups == g).sum()
        counts = np.bincount(codes[groups == g], minlength=5)[members]
        assert np.all(np.abs(counts - m * fine[members] / fine[members].sum()) < 1.0)
