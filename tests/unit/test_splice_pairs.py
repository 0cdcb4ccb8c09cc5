"""SPLICE's pair anchors: chosen where the moment fit misses, accounted exactly, matched in Match."""

import math

import numpy as np
import pandas as pd
import pytest

from spark_synth.engines import LocalTaskRunner, SpliceEngine
from spark_synth.engines.splice.pairs import PAIR_MAX_CELLS, PAIR_SELECT_SHARE, candidate_pairs
from spark_synth.errors import ParameterError
from spark_synth.oracle import oracle_over_frame
from spark_synth.privacy import PrivacyBudget, PrivacyFilter
from spark_synth.queries import MarginalQuery
from spark_synth.schema import Column, ColumnType, Schema
from tests.helpers import ExactOracle

LEVELS = tuple(f"l{i}" for i in range(8))
SCHEMA = Schema(
    columns=(
        Column("level", ColumnType.CATEGORICAL, categories=LEVELS, nullable=False),
        Column("years", ColumnType.INTEGER, min=0, max=79, nullable=False),  # ≈ 10 × level: the Gaussian block
        Column("colour", ColumnType.CATEGORICAL, categories=("r", "g", "b"), nullable=False),
        Column("flag", ColumnType.CATEGORICAL, categories=("y", "n"), nullable=False),
    )
)


#: A categorical column, a nullable integer code column (10 values in 4 ranges at 4 groups) and two
#: Gaussian-block candidates (u; w nullable), for the pair-misfit and spread tests.
MIXED = Schema(columns=(Column("c", ColumnType.CATEGORICAL, categories=("x", "y", "z"), nullable=False),
                        Column("n", ColumnType.INTEGER, min=0, max=9, nullable=True),
                        Column("u", ColumnType.CONTINUOUS, min=0.0, max=1.0, bins=12, nullable=False),
                        Column("w", ColumnType.CONTINUOUS, min=0.0, max=1.0, bins=8, nullable=True)))


def _mixed_mixture(seed: int, k: int, rank: int):
    """Random weights, code probabilities (c, n) and Gaussian block (u, w) of a K-component mixture over MIXED (torch)."""
    import torch

    from spark_synth.engines.splice.closed_form import GaussianParameters

    rng = np.random.default_rng(seed)
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
    weights = t(rng.dirichlet(np.ones(k)))
    probs = [t(rng.dirichlet(np.ones(3), size=k)), t(rng.dirichlet(np.ones(11), size=k))]
    block = GaussianParameters(t(rng.uniform(-0.5, 0.5, (k, 2))), t(0.4 * rng.standard_normal((k, 2, rank))),
                               t(rng.uniform(0.02, 0.1, (k, 2))))
    return weights, probs, block


def _data(n=4000, seed=0):
    rng = np.random.default_rng(seed)
    order = rng.permutation(8)  # years is a function of level, but not a monotone one of its code
    level = rng.choice(8, n, p=np.arange(8, 0, -1) / 36)
    years = 10 * order[level] + rng.integers(0, 3, n)
    colour = rng.choice(["r", "g", "b"], n)
    flag = np.where(rng.random(n) < 0.8, np.where(colour == "r", "y", "n"), rng.choice(["y", "n"], n))
    return pd.DataFrame({"level": np.array(LEVELS)[level], "years": years, "colour": colour, "flag": flag})


def _pair_tvd(model, frame, a, b, groups_b):
    """TVD of the (a, b) table, b's codes merged by ``groups_b``, model draws vs the frame."""
    from spark_synth.measure import answer_frame

    query = MarginalQuery(columns=(SCHEMA.columns[a].name, SCHEMA.columns[b].name), groupings=(None, groups_b))
    (real,) = answer_frame(frame, SCHEMA, [query])
    codes = model.sample_codes(40_000, np.random.default_rng(1))
    shape = query.answer_shape(SCHEMA)
    grouped_b = np.asarray(groups_b)[codes[:, b]]
    synthetic = np.bincount(codes[:, a] * shape[1] + grouped_b, minlength=math.prod(shape)) / len(codes)
    return 0.5 * np.abs(real.ravel() / real.sum() - synthetic).sum()


def test_pair_anchors_recover_a_functional_pair_the_moments_miss():
    frame = _data()
    options = dict(components=8, n_dense=8, n_sparse=24, steps=300, pair_groups=8)
    groups = tuple(code // 10 for code in range(80))  # years in its 8 public ranges of 10
    without = SpliceEngine(pair_share=0.0, **options).fit(SCHEMA, ExactOracle(frame, SCHEMA), LocalTaskRunner())
    oracle = ExactOracle(frame, SCHEMA)
    # exact answers (σ equal for all): the Gaussian-likelihood weight is pair_weight / L; 10 makes it count
    engine = SpliceEngine(pair_share=0.25, pair_count=2, pair_weight=10.0, **options)
    measured = engine.measure(SCHEMA, oracle)
    pairs = [m.columns for m in measured if m.query.kind == "marginal" and len(m.columns) == 2]
    assert ("level", "years") in pairs  # the pair the first fit misses most is chosen
    assert [c[0] for c in oracle.calls].count("select") == 2
    with_pairs = engine.fit_measurements(SCHEMA, measured)
    before, after = _pair_tvd(without, frame, 0, 1, groups), _pair_tvd(with_pairs, frame, 0, 1, groups)
    assert after < 0.5 * before, (before, after)  # measured: 0.73 -> 0.28


def test_pair_budget_is_split_and_charged_exactly():
    frame = _data(1500)
    budget = PrivacyBudget(1.0, 1e-9)
    privacy_filter = PrivacyFilter(budget)
    engine = SpliceEngine(components=4, n_dense=4, n_sparse=8, steps=30, pair_share=0.3, pair_count=3, pair_groups=8)
    measured = engine.measure(SCHEMA, oracle_over_frame(frame, SCHEMA, privacy_filter))
    rho = budget.rho
    entries = privacy_filter.report().entries
    pair_releases = [m for m in measured if m.query.kind == "marginal" and len(m.columns) == 2]
    selections = [e for e in entries if e.kind == "selection"]
    assert len(pair_releases) == len(selections) == 3
    for release in pair_releases:
        assert release.rho == pytest.approx(0.3 * rho / 3 * (1 - PAIR_SELECT_SHARE), rel=1e-6)
        assert release.sigma == pytest.approx(1 / math.sqrt(2 * release.rho), rel=1e-6)
    for selection in selections:
        assert selection.rho <= 0.3 * rho / 3 * PAIR_SELECT_SHARE * (1 + 1e-9)
    assert math.fsum(e.rho for e in entries) <= rho * (1 + 1e-9)
    assert math.fsum(e.rho for e in entries) == pytest.approx(rho, rel=1e-3)
    moments = [m for m in measured if m.query.kind == "moment"]
    assert moments and moments[0].rho == pytest.approx((1 - engine.options.marginal_share - 0.3) * rho, rel=1e-6)



@pytest.mark.parametrize("options, schema", [
    (dict(pair_count=0), SCHEMA),
    (dict(), Schema(columns=SCHEMA.columns[:1])),  # one column: no pair
    (dict(max_component_codes=1), SCHEMA),  # every pair touches a shared column: no candidate
])
def test_pair_share_goes_to_the_moments_when_no_pair_is_measured(options, schema):
    frame = _data(1500)[[c.name for c in schema]]
    budget = PrivacyBudget(1.0, 1e-9)
    privacy_filter = PrivacyFilter(budget)
    engine = SpliceEngine(components=4, n_dense=4, n_sparse=8, steps=30, min_moment_snr=0, **options)
    measured = engine.measure(schema, oracle_over_frame(frame, schema, privacy_filter))
    assert not [m for m in measured if m.query.kind == "marginal" and len(m.columns) == 2]
    assert not [e for e in privacy_filter.report().entries if e.kind == "selection"]
    (moments,) = [m for m in measured if m.query.kind == "moment"]
    assert moments.rho == pytest.approx((1 - engine.options.marginal_share) * budget.rho, rel=1e-6)
    assert math.fsum(e.rho for e in privacy_filter.report().entries) == pytest.approx(budget.rho, rel=1e-6)

def test_candidates_leave_out_oversized_tables_and_block_pairs_above_rank_one():
    assert candidate_pairs(SCHEMA, gaussian=(1,), rank=1) == [(0, 1), (0, 2), (0, 3), (1, 2), (1, 3), (2, 3)]
    assert (1, 2) in candidate_pairs(SCHEMA, gaussian=(1, 2), rank=1)  # one shared factor: integrated exactly enough
    assert (1, 2) not in candidate_pairs(SCHEMA, gaussian=(1, 2), rank=2) and (0, 2) in candidate_pairs(SCHEMA, (1, 2), 2)
    wide = Schema(columns=(Column("a", ColumnType.CATEGORICAL, categories=tuple(range(100)), nullable=False),
                           Column("b", ColumnType.CATEGORICAL, categories=tuple(range(100)), nullable=False),
                           Column("c", ColumnType.CATEGORICAL, categories=("x", "y"), nullable=False)))
    assert 100 * 100 > PAIR_MAX_CELLS
    frame = pd.DataFrame({"a": np.arange(300) % 100, "b": np.arange(300) % 100, "c": ["x", "y", "y"] * 100})
    engine = SpliceEngine(components=2, n_dense=2, n_sparse=4, steps=5)
    released = engine.measure(wide, ExactOracle(frame, wide))[:-1]  # not the pairs
    names = [query.columns for query in engine.pair_candidates(wide, [m for m in released if m.query.kind == "marginal"])]
    assert ("a", "b") not in names and ("a", "c") in names and ("b", "c") in names


def test_sparse_grouping_merges_what_the_pair_noise_swamps_from_the_released_anchors():
    from spark_synth.engines.groupings import coarse_groupings, merge_sparse_groups
    from spark_synth.engines.splice.engine import SPARSE_SIGMAS

    frame = _data(3000)
    engine = SpliceEngine(components=2, n_dense=2, n_sparse=4, steps=5, pair_groups=16)
    assert engine.options.pair_grouping == "sparse"
    released = [m for m in engine.measure(SCHEMA, ExactOracle(frame, SCHEMA)) if m.query.kind == "marginal" and len(m.columns) == 1]
    rows, anchors = engine._anchors(SCHEMA, released)
    sigma = 20.0
    sparse = {q.columns: q for q in engine.pair_candidates(SCHEMA, released, sigma)}
    width = {q.columns: q for q in SpliceEngine(**{**vars(engine.options), "pair_grouping": "width"}).pair_candidates(SCHEMA, released, sigma)}
    expected = merge_sparse_groups(SCHEMA, coarse_groupings(SCHEMA, 16), anchors, SPARSE_SIGMAS * sigma / rows)  # DP releases only
    assert sparse[("level", "years")].groupings == (expected[0], expected[1])
    assert width[("level", "years")].groupings == (None, coarse_groupings(SCHEMA, 16)[1])
    # years holds 24 of its 80 values, in 8 of its 16 public ranges: the empty ranges are merged away
    assert max(expected[1]) + 1 < max(coarse_groupings(SCHEMA, 16)[1]) + 1
    held = np.bincount(np.asarray(expected[1]), weights=anchors[1]) / anchors[1].sum()
    assert held.min() >= SPARSE_SIGMAS * sigma / rows
    # a column whose values all fall in one group gets no pair: its table would be a 1-way one
    flat = merge_sparse_groups(SCHEMA, coarse_groupings(SCHEMA, 16), anchors, 0.9)
    assert len(set(flat[1])) == 1
    assert not [q for q in engine.pair_candidates(SCHEMA, released, 0.9 * rows / SPARSE_SIGMAS) if "years" in q.columns]


@pytest.mark.parametrize("options, name", [
    ({"pair_grouping": "quantile"}, "splice.pair_grouping"),
    ({"pair_share": 0.5}, "splice.pair_share"),  # with marginal_share 0.5: no budget left for the moments
    ({"pair_share": -0.1}, "splice.pair_share"),
    ({"marginal_share": 0.0, "quantile_encoding": 0.0, "rows_public": 100, "pair_share": 0.25}, "splice.pair_share"),  # not silently ignored
    ({"pair_share": True}, "splice.pair_share"),
    ({"marginal_share": 0.55}, "splice.marginal_share"),  # the default pair share 0.45 would leave the moments nothing
    ({"pair_count": -1}, "splice.pair_count"),
    ({"pair_groups": 1}, "splice.pair_groups"),
    ({"pair_weight": float("nan")}, "splice.pair_weight"),
    ({"spread_weight": -0.01}, "splice.spread_weight"),
    ({"spread_weight": float("inf")}, "splice.spread_weight"),
])
def test_bad_pair_options_are_named(options, name):
    with pytest.raises(ParameterError, match=name):
        SpliceEngine(**options)


@pytest.mark.parametrize("columns", [SCHEMA.columns, SCHEMA.columns[1:2], SCHEMA.columns[2:]])
def test_null_pair_share_is_charged(columns):
    schema = Schema(columns=columns)
    frame = _data(1500)[[c.name for c in schema]]
    budget = PrivacyBudget(1.0, 1e-9)
    privacy_filter = PrivacyFilter(budget)
    engine = SpliceEngine(components=4, n_dense=4, n_sparse=8, steps=30, min_moment_snr=0, pair_count=1, pair_groups=8)
    share = engine.pair_share_for(schema)
    assert share == pytest.approx(0.45)
    measured = engine.measure(schema, oracle_over_frame(frame, schema, privacy_filter))
    (moments,) = [m for m in measured if m.query.kind == "moment"]
    pairs = [m for m in measured if m.query.kind == "marginal" and len(m.columns) == 2]
    if len(schema) == 1:
        assert not pairs and moments.rho == pytest.approx(0.5 * budget.rho, rel=1e-6)  # no pair: all to the moments
    else:
        assert len(pairs) == 1 and pairs[0].rho == pytest.approx(share * budget.rho * (1 - PAIR_SELECT_SHARE), rel=1e-6)
        assert moments.rho == pytest.approx((0.5 - share) * budget.rho, rel=1e-6)
    assert math.fsum(e.rho for e in privacy_filter.report().entries) == pytest.approx(budget.rho, rel=1e-6)
    assert SpliceEngine(marginal_share=0.0, quantile_encoding=0.0, rows_public=100).pair_share_for(schema) == 0.0  # no anchors, no pairs


@pytest.mark.parametrize("rank", [0, 1])
def test_mixture_pair_tables_match_monte_carlo(rank):
    """The tables Match fits (code × block column: exact marginal; two block columns: Gauss–Hermite
    over the shared factor) equal the frequencies of the model's own draws."""
    import torch

    from spark_synth.engines.splice.closed_form import GaussianParameters
    from spark_synth.engines.splice.gaussian import GaussianBlock
    from spark_synth.engines.splice.model import SpliceModel
    from spark_synth.engines.splice.pairs import PairMisfit, PairTarget
    from spark_synth.schema.embedding import Embedding

    schema = Schema(columns=(Column("c", ColumnType.CATEGORICAL, categories=("x", "y", "z"), nullable=False),
                             Column("u", ColumnType.CONTINUOUS, min=0.0, max=1.0, bins=12, nullable=False),
                             Column("w", ColumnType.CONTINUOUS, min=0.0, max=1.0, bins=8, nullable=False)))
    embedding = Embedding(schema)
    rng = np.random.default_rng(3)
    weights, probs = np.array([0.3, 0.7]), [rng.dirichlet(np.ones(3), size=2)]
    mean, factor, diag = rng.uniform(-0.5, 0.5, (2, 2)), 0.5 * rng.standard_normal((2, 2, rank)), rng.uniform(0.02, 0.1, (2, 2))
    groups_u = tuple(v // 3 for v in range(12))  # 12 bins in 4 ranges
    pairs = [PairTarget((0, 1), (None, groups_u), np.zeros((3, 4)), 1.0), PairTarget((1, 2), (groups_u, None), np.zeros((4, 8)), 1.0)]
    misfit = PairMisfit(schema, embedding, (1, 2), {1: 0.0, 2: 0.0}, pairs, 1.0, torch.device("cpu"))
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
    block = GaussianParameters(t(mean), t(factor), t(diag))
    tables = [misfit.table(i, t(weights), [t(probs[0])], block).numpy() for i in range(2)]
    model = SpliceModel(weights, probs, 1.0, GaussianBlock(columns=(1, 2), mean=mean, factor=factor, diag=diag,
                                                           edges=(embedding.value_edges(1), embedding.value_edges(2)),
                                                           calibration=None, null_share=(0.0, 0.0)))
    codes = model.sample_codes(400_000, np.random.default_rng(4))
    grouped_u = np.asarray(groups_u)[codes[:, 1]]
    drawn = [np.bincount(codes[:, 0] * 4 + grouped_u, minlength=12).reshape(3, 4) / len(codes),
             np.bincount(grouped_u * 8 + codes[:, 2], minlength=32).reshape(4, 8) / len(codes)]
    for table, frequencies in zip(tables, drawn):
        assert table.sum() == pytest.approx(1.0, abs=1e-9)
        assert np.abs(table - frequencies).max() < 0.004
    if rank:  # the shared factor makes u and w dependent within a component: a product of marginals misses it
        (_, (edges_u, edges_w), _, _) = misfit.terms[1]
        product = sum(w * np.outer(misfit._block_groups(1, edges_u, block, False)[k, 0].numpy(),
                                   misfit._block_groups(2, edges_w, block, False)[k, 0].numpy()) for k, w in enumerate(weights))
        assert np.abs(product - drawn[1]).max() > 0.01


def test_columns_with_many_codes_share_one_distribution_and_get_no_pairs():
    many = Schema(columns=(Column("code", ColumnType.CATEGORICAL, categories=tuple(range(40)), nullable=False),
                           Column("c", ColumnType.CATEGORICAL, categories=("x", "y"), nullable=False),
                           Column("d", ColumnType.CATEGORICAL, categories=("x", "y", "z"), nullable=False)))
    rng = np.random.default_rng(0)
    code = rng.integers(0, 40, 3000)
    frame = pd.DataFrame({"code": code, "c": np.where(code < 20, "x", "y"), "d": rng.choice(["x", "y", "z"], 3000)})
    engine = SpliceEngine(components=4, n_dense=4, n_sparse=12, steps=40, max_component_codes=39)
    measured = engine.measure(many, ExactOracle(frame, many))
    assert not [m for m in measured if m.query.kind == "marginal" and "code" in m.columns and len(m.columns) == 2]
    model = engine.fit_measurements(many, measured)
    shared = model.probabilities[0]
    assert np.allclose(shared, shared[0]) and not np.allclose(model.probabilities[1], model.probabilities[1][0])
    assert np.allclose(model.marginal(0), shared[0])
    per_component = SpliceEngine(components=4, n_dense=4, n_sparse=12, steps=40, max_component_codes=40).fit(many, ExactOracle(frame, many),
                                                                                                            LocalTaskRunner())
    assert not np.allclose(per_component.probabilities[0], per_component.probabilities[0][0])



def test_component_spread_is_each_columns_weighted_variance_across_components():
    """The prior equals Σ_c Σ_k w_k ‖P_k(c) − Σ_l w_l P_l(c)‖² over the columns' public merges, each
    component's grouped distribution read off the pair tables of that component alone (code and
    block columns, nulls included); it is 0 when the components agree on every column."""
    import torch

    from spark_synth.engines.groupings import coarse_groupings
    from spark_synth.engines.splice.closed_form import GaussianParameters
    from spark_synth.engines.splice.pairs import ComponentSpread, PairMisfit, PairTarget
    from spark_synth.schema.embedding import Embedding

    schema = MIXED
    embedding, groupings = Embedding(schema), coarse_groupings(schema, 4)
    k = 5
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
    weights, probs, block = _mixed_mixture(5, k, 0)
    nulls = {2: 0.0, 3: 0.05}

    def target(pair):
        shape = [len(set(groupings[j])) if groupings[j] is not None else schema.columns[j].size for j in pair]
        return PairTarget(pair, tuple(groupings[j] for j in pair), np.zeros(shape), 1.0)

    misfit = PairMisfit(schema, embedding, (2, 3), nulls, [target((0, 1)), target((2, 3))], 1.0, torch.device("cpu"))
    spread = ComponentSpread(misfit, schema, embedding, range(4), groupings, 2.0, torch.device("cpu"))
    expected = 0.0
    for index in range(2):  # table 0 gives columns c and n, table 1 columns u and w
        per_component = [misfit.table(index, t(np.eye(k)[i]), probs, block) for i in range(k)]
        for axis in (1, 0):
            p = torch.stack([table.sum(axis) for table in per_component])  # (K, groups)
            assert np.allclose(p.sum(1).numpy(), 1.0)
            expected += float(weights @ ((p - weights @ p) ** 2).sum(1))
    assert expected > 1e-2  # the components differ
    assert float(spread(weights, probs, block)) == pytest.approx(2.0 * expected, rel=1e-9)
    alike = [t(np.tile(p[:1].numpy(), (k, 1))) for p in probs]
    same = GaussianParameters(block.mean[:1].expand(k, -1), block.factor, block.diag[:1].expand(k, -1))
    assert float(spread(weights, alike, same)) == pytest.approx(0.0, abs=1e-15)


@pytest.mark.parametrize("rows, pair_rho", [(100_000.0, 0.45), (6_500.0, 0.324), (800.0, 0.0)])
def test_null_pair_share_gives_the_moments_what_keeps_their_snr(rows, pair_rho):
    """With pair_share null the pairs take 0.45 of ρ unless the moments, at the DP row count, would fall
    below 1.5 × min_moment_snr times their noise σ: then the pairs give back just that much (none left: 0)."""
    from spark_synth.privacy import gaussian_sigma

    engine = SpliceEngine()
    moments = engine.moment_query(SCHEMA, None)
    rho_rest = 0.5 * 0.015
    rho_moments, rho_pairs = engine.moment_and_pair_rho(moments, rho_rest, 0.45 * 0.015, rows)
    assert rho_moments + rho_pairs == pytest.approx(rho_rest) and rho_pairs / 0.015 == pytest.approx(pair_rho, abs=1e-3)
    if 0 < pair_rho < 0.45:
        assert rows / gaussian_sigma(moments.l2_sensitivity, rho_moments) == pytest.approx(1.5 * 10.0)
    explicit = SpliceEngine(pair_share=0.45).moment_and_pair_rho(moments, rho_rest, 0.45 * 0.015, 6_500.0)
    assert explicit[1] == pytest.approx(0.45 * 0.015)  # a declared pair_share is kept as declared


@pytest.mark.parametrize("rank", [0, 1])
def test_pair_misfit_batched_equals_sum_of_per_pair_misfits(rank):
    """Match's batched misfit (every table with at most one block column read off one product of the
    stacked group probabilities) equals Σ scale/σ² ‖T − t̃‖² over the tables one by one: code × code,
    code × block (nullable, merged), block × block, and a column in several tables."""
    import torch

    from spark_synth.engines.groupings import coarse_groupings
    from spark_synth.engines.splice.pairs import PairMisfit, PairTarget
    from spark_synth.schema.embedding import Embedding

    schema = MIXED
    embedding, groupings = Embedding(schema), coarse_groupings(schema, 4)
    rng = np.random.default_rng(9)
    t = lambda a: torch.as_tensor(a, dtype=torch.float64)  # noqa: E731
    weights, probs, block = _mixed_mixture(9, 4, rank)

    def target(pair, merged, sigma):
        grouping = tuple(groupings[j] if merged else None for j in pair)
        shape = [len(set(g)) if g is not None else schema.columns[j].size for j, g in zip(pair, grouping)]
        return PairTarget(pair, grouping, rng.dirichlet(np.ones(int(np.prod(shape)))).reshape(shape), sigma)

    pairs = [target((0, 1), True, 0.5), target((0, 3), True, 1.5), target((1, 2), True, 0.7), target((2, 3), False, 2.0),
             target((0, 2), False, 1.0), target((1, 3), False, 0.9)]  # n merged in one table, unmerged in another
    misfit = PairMisfit(schema, embedding, (2, 3), {2: 0.0, 3: 0.05}, pairs, 3.0, torch.device("cpu"))
    assert misfit.quadrature == [3]  # u × w: the only table integrated over the factor
    one_by_one = sum(3.0 / p.sigma ** 2 * float(((misfit.table(i, weights, probs, block) - t(p.shares)) ** 2).sum())
                     for i, p in enumerate(pairs))
    assert one_by_one > 0.1
    assert float(misfit(weights, probs, block)) == pytest.approx(one_by_one, rel=1e-12)


def test_a_block_column_merged_into_one_value_group_keeps_its_group_and_null_group():
    """A sparse merge can leave a Gaussian-block column one value group (no inner edge): its group
    probabilities are then 1 − null share and the null share, not an empty table."""
    import torch

    from spark_synth.engines.splice.pairs import PairMisfit, PairTarget
    from spark_synth.schema.embedding import Embedding

    weights, probs, block = _mixed_mixture(3, 4, 1)
    one = (0,) * 8 + (1,)  # w: 8 bins in one group, then its null code
    pair = PairTarget((0, 3), (None, one), np.full((3, 2), 1 / 6), 1.0)
    misfit = PairMisfit(MIXED, Embedding(MIXED), (2, 3), {2: 0.0, 3: 0.05}, [pair], 1.0, torch.device("cpu"))
    groups = misfit.column_groups(3, misfit.stacked[1][1], probs, block)
    assert tuple(groups.shape) == (4, 2)
    assert torch.allclose(groups, torch.tensor([[0.95, 0.05]] * 4, dtype=torch.float64))
    table = misfit.table(0, weights, probs, block)
    assert torch.allclose(table.sum(0), torch.tensor([0.95, 0.05], dtype=torch.float64))


def test_component_spread_removes_dependence_no_release_calls_for():
    """level and flag are independent and their table is not measured: without the prior the final
    Match ties them through the components anyway (measured: 0.10 TVD from independence); with the
    default spread_weight that falls by more than half (0.047)."""
    frame = _data()
    options = dict(components=8, n_dense=8, n_sparse=24, steps=300, pair_groups=8, pair_share=0.25, pair_count=2, pair_weight=10.0)
    measured = SpliceEngine(**options).measure(SCHEMA, ExactOracle(frame, SCHEMA))
    assert {("level", "years"), ("level", "colour")} == {m.columns for m in measured if m.query.kind == "marginal" and len(m.columns) == 2}

    def dependence(model, a, b):
        codes = model.sample_codes(200_000, np.random.default_rng(1))
        sa, sb = SCHEMA.columns[a].size, SCHEMA.columns[b].size
        table = np.bincount(codes[:, a] * sb + codes[:, b], minlength=sa * sb).reshape(sa, sb) / len(codes)
        return 0.5 * np.abs(table - np.outer(table.sum(1), table.sum(0))).sum()

    without = SpliceEngine(**options, spread_weight=0.0).fit_measurements(SCHEMA, measured)
    with_prior = SpliceEngine(**options).fit_measurements(SCHEMA, measured)
    assert dependence(without, 0, 3) > 0.05
    assert dependence(with_prior, 0, 3) < 0.6 * dependence(without, 0, 3)


def test_pair_budgets_never_ask_more_than_is_left():
    from fractions import Fraction

    from spark_synth.engines.splice.engine import pair_round_rho

    # a CI run's 70 pair measurements asked one ulp more than was left; these two splits rounded up
    rho, rounds = 0.08445774296735231, 99  # ρ / rounds, times rounds, is above ρ
    select, measure = pair_round_rho(rho, rounds)
    assert (Fraction(select) + Fraction(measure)) * rounds <= Fraction(rho)
    assert select + measure == pytest.approx(rho / rounds, rel=1e-12)
    rest, pairs = 0.0890353676916294, 0.004422804344066951  # rest − pairs, plus pairs, is above rest
    moments, kept = SpliceEngine(pair_share=0.2).moment_and_pair_rho(None, rest, pairs, rows=0)
    assert kept == pairs and Fraction(moments) + Fraction(pairs) <= Fraction(rest)
    assert moments == pytest.approx(rest - pairs, rel=1e-12)
