"""Conditioned sampling (``--where``, ``--rows-per``): the condition language, the numeric sets, and every
engine's conditioned model against the model's exact conditional (brute force on small domains for
independent and FPT, rejection from the unconditioned model for SPLICE and DGM)."""

from __future__ import annotations

import itertools

import numpy as np
import pandas as pd
import pytest

from spark_synth.engines import IndependentModel
from spark_synth.engines.dgm.join import JoinSettings
from spark_synth.engines.dgm.model import DgmModel
from spark_synth.engines.evidence import Evidence
from spark_synth.engines.fpt.model import FptLpModel, FptModel
from spark_synth.engines.splice.gaussian import GaussianBlock
from spark_synth.engines.splice.model import SpliceModel
from spark_synth.sample.conditions import ConditionError, as_condition, parse_condition, parse_predicates
from spark_synth.sample.plan import sampling_plan
from spark_synth.schema import decode_codes, schema_from_dict
from spark_synth.schema.value_sets import Interval, NumberSet, bin_weights, draw_within


def _schema():
    return schema_from_dict({"name": "t", "columns": [
        {"name": "sex", "type": "categorical", "categories": ["Male", "Female"], "nullable": False},
        {"name": "age", "type": "integer", "min": 17, "max": 90, "bins": 8, "nullable": True},
        {"name": "income", "type": "continuous", "min": 0, "max": 1000, "bins": 5, "decimals": 2, "nullable": False},
        {"name": "band", "type": "ordinal", "categories": [1, 2, 3, 5], "nullable": False},
        {"name": "member", "type": "boolean", "nullable": False},
        {"name": "visit", "type": "date", "min": "2020-01-01", "max": "2020-12-31", "bins": 4, "nullable": False},
        {"name": "my col", "type": "categorical", "categories": ["a", "b"], "nullable": False},
    ]})


def _histogram(codes, sizes):
    counts = np.zeros(sizes)
    np.add.at(counts, tuple(codes.T), 1)
    return counts / counts.sum()


def _tvd(a, b):
    return 0.5 * float(np.abs(a - b).sum())


# ---- the language ----------------------------------------------------------------------------------
def test_a_condition_compiles_to_per_column_weights_and_number_sets():
    schema = _schema()
    condition = parse_condition("sex = \"Female\" AND age >= 65 and (income BETWEEN 100 AND 250.5) AND band IN (2, 5) "
                                "AND member = TRUE AND visit < '2020-04-15' AND `my col` != 'a'", schema)
    w = condition.weights
    assert w[0].tolist() == [0, 1]
    age_edges = schema.columns[1].bin_edges  # 8 bins of 74 integers: 65..90 are 26 of them, the null code is out
    expected = [len([v for v in range(int(np.ceil(lo)), int(np.ceil(hi))) if v >= 65]) / (np.ceil(hi) - np.ceil(lo))
                for lo, hi in zip(age_edges[:-1], age_edges[1:])]
    assert w[1].tolist() == pytest.approx(expected + [0.0])
    assert w[2].tolist() == pytest.approx([(200 - 100) / 200, 50.5 / 200, 0, 0, 0])  # bins of 200
    assert w[3].tolist() == [0, 1, 0, 1] and w[4].tolist() == [0, 1] and w[6].tolist() == [0, 1]
    assert w[5][0] == pytest.approx(1.0) and w[5][1] > 0 and w[5][2:].sum() == 0  # the first quarter and a bit
    assert condition.numbers[1].contains([64, 65, 90]).tolist() == [False, True, True]


def test_and_on_one_column_intersects_and_is_null_keeps_only_the_null_code():
    schema = _schema()
    w = parse_condition("age > 30 AND age <= 40", schema).weights[1]
    edges = np.ceil(schema.columns[1].bin_edges)
    assert (w[:-1] * np.diff(edges)).sum() == pytest.approx(10)  # the integers 31..40
    assert parse_condition("age IS NULL", schema).weights[1].tolist() == [0] * 8 + [1]
    assert parse_condition("age IS NOT NULL", schema).weights[1].tolist() == [1] * 8 + [0]
    assert parse_condition("band NOT BETWEEN 2 AND 3", schema).weights[3].tolist() == [1, 0, 0, 1]


@pytest.mark.parametrize("text, fragment", [
    ("age >= 65 OR sex = 'Male'", "OR is not supported"),
    ("agee > 3", "did you mean `age`"),
    ("sex = 'Mal'", "did you mean 'Male'"),
    ("sex > 'a'", "have no order; use = or IN"),
    ("age = NULL", "IS NULL"),
    ("age >", "expected a value"),
    ("sex = 3", "write the value in quotes"),
    ("age = 'x'", "compare it with a number"),
    ("member = 1", "compare it with TRUE or FALSE"),
    ("visit > 5", "write the value as text"),
    ("visit > 'soon'", "is not a date"),
    ("age IN (1, 2", "')' or ','"),
    ("age >= 65 sex = 'Male'", "expected AND"),
    ("", "non-empty"),
    ("age ~ 3", "cannot read"),
])
def test_a_bad_condition_is_refused_naming_its_part(text, fragment):
    with pytest.raises(ConditionError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        parse_condition(text, _schema())


def test_quotes_inside_text_are_doubled_and_keywords_take_any_case():
    predicates = parse_predicates("name = 'O''Brien' and x between -1.5e2 aNd 3 AND y is not null")
    assert [(p.column, p.op, p.values) for p in predicates] == [
        ("name", "=", ("O'Brien",)), ("x", "between", (-150.0, 3.0)), ("y", "is not null", ())]


def test_a_mapping_of_conditions_means_equality_and_lists_mean_in():
    schema = _schema()
    condition = as_condition({"sex": "Female", "band": [1, 5]}, schema)
    assert condition.weights[0].tolist() == [0, 1] and condition.weights[3].tolist() == [1, 0, 0, 1]
    with pytest.raises(ConditionError, match="no column"):
        as_condition({"nope": 1}, schema)


# ---- numeric sets ------------------------------------------------------------------------------------
def test_number_sets_intersect_and_complement_with_open_and_closed_ends():
    a = NumberSet([Interval(0, 10, True, False)])
    b = NumberSet.point(5).complement()
    both = a.intersect(b)
    assert both.contains([0, 4.9, 5, 5.1, 10]).tolist() == [True, True, False, True, False]
    assert NumberSet.union_of([NumberSet([Interval(0, 1)]), NumberSet([Interval(1, 2, False, True)])]).intervals == (Interval(0, 2),)


def test_draws_within_a_set_stay_inside_and_are_uniform_over_what_is_left_of_the_bin():
    schema = _schema()
    age, income = schema.columns[1], schema.columns[2]
    allowed = NumberSet([Interval(40, 44), Interval(60, 61, False, True)])
    codes = np.flatnonzero(bin_weights(age, allowed) > 0)
    rng = np.random.default_rng(0)
    values = draw_within(np.repeat(codes, 20000), age, allowed, rng)
    assert set(np.unique(values)) == {40, 41, 42, 43, 44, 61}
    money = NumberSet([Interval(150, 420, False, False)])
    drawn = draw_within(np.full(50000, 2), income, money, rng)  # bin 2 is [400, 600): only (400, 420) is left
    assert drawn.min() > 400 and drawn.max() < 420 and abs(drawn.mean() - 410) < 0.2


# ---- engines against their exact conditionals ---------------------------------------------------------
def _fpt_model(lp: bool):
    """A small FPT model with both kinds of refinement (a coarsened column refined given the target, one without)."""
    rng = np.random.default_rng(0)
    sizes, code_sizes = [3, 2, 2, 2], [3, 5, 2, 4]
    refinements = {1: (np.array([0, 0, 0, 1, 1]), rng.random(5), rng.random((5, 2))),
                   3: (np.array([0, 1, 1, 1]), np.array([0.5, 0.2, 0.0, 0.3]), None)}
    if lp:
        support = np.array(list(itertools.product(*[range(s) for s in sizes])))
        return FptLpModel(code_sizes, sizes, support, rng.random(len(support)), 1000, refinements, target=2)
    potentials = {(0, 1): rng.normal(size=(3, 2)), (1, 2): rng.normal(size=(2, 2)), (2, 3): rng.normal(size=(2, 2)),
                  (0,): np.array([0.0, 0.0, -1e4])}
    return FptModel(code_sizes, sizes, potentials, 1000, refinements, target=2)


def _fpt_joint(model) -> np.ndarray:
    """The exact distribution over fine codes, by enumeration."""
    joint = np.zeros(model.code_sizes)
    if isinstance(model, FptLpModel):
        cells = [(tuple(row), w) for row, w in zip(model.support, model.weights)]
    else:
        cells = [(x, np.exp(sum(t[tuple(x[v] for v in s)] for s, t in model.potentials.items())))
                 for x in itertools.product(*[range(s) for s in model.sizes])]
    for x, mass in cells:
        per_column = []
        for j, size in enumerate(model.code_sizes):
            if j not in model.refinements:
                per_column.append({x[j]: 1.0})
                continue
            grouping, fine, by_target = model.refinements[j]
            members = np.flatnonzero(grouping == x[j])
            weights = fine[members] * (1 if by_target is None else by_target[members, x[model.target]])
            weights = weights if weights.sum() > 0 else fine[members]  # as the sampler falls back
            weights = weights if weights.sum() > 0 else np.ones(len(members))
            per_column.append(dict(zip(members, weights / weights.sum())))
        for fine_codes in itertools.product(*[list(c.items()) for c in per_column]):
            joint[tuple(c for c, _ in fine_codes)] += mass * np.prod([q for _, q in fine_codes])
    return joint / joint.sum()


@pytest.mark.parametrize("lp", [False, True], ids=["junction tree", "LP histogram"])
def test_fpt_conditions_exactly_with_evidence_on_refined_and_plain_columns(lp):
    model = _fpt_model(lp)
    evidence = Evidence({0: np.array([1.0, 1.0, 1.0]), 1: np.array([1, 0, 0.5, 1, 0]), 3: np.array([0, 1, 0.3, 1])})
    joint = _fpt_joint(model)
    weighted = joint * np.einsum("i,j,k,l->ijkl", evidence.get(0), evidence.get(1), np.ones(2), evidence.get(3))
    conditioned, probability = model.conditioned(evidence)
    assert probability == pytest.approx(weighted.sum(), rel=1e-9)
    assert np.allclose(_fpt_joint(conditioned), weighted / weighted.sum(), atol=1e-12)
    rows = conditioned.sample_codes(200_000, np.random.default_rng(1))
    assert _tvd(_histogram(rows, model.code_sizes), weighted / weighted.sum()) < 0.01


def test_fpt_conditions_exactly_when_the_target_itself_is_refined():
    """A regression target: the model holds it in ranges (refined after sampling too), and another
    column's codes are refined given the target's range, not its refined value."""
    rng = np.random.default_rng(4)
    sizes, code_sizes = [3, 2, 2, 2], [3, 5, 4, 4]
    by_target = rng.random((5, 2))
    refinements = {2: (np.array([0, 0, 1, 1]), np.array([0.3, 0.7, 0.6, 0.4]), None),  # the target refined first
                   1: (np.array([0, 0, 0, 1, 1]), rng.random(5), by_target),
                   3: (np.array([0, 1, 1, 1]), np.array([0.5, 0.2, 0.0, 0.3]), None)}
    potentials = {(0, 1): rng.normal(size=(3, 2)), (1, 2): rng.normal(size=(2, 2)), (2, 3): rng.normal(size=(2, 2))}
    model = FptModel(code_sizes, sizes, potentials, 1000, refinements, target=2)
    evidence = Evidence({1: np.array([1, 0, 0.5, 1, 0]), 2: np.array([1.0, 0.0, 1.0, 0.5])})
    joint = _fpt_joint(model)
    weighted = joint * np.einsum("i,j,k,l->ijkl", np.ones(3), evidence.get(1), evidence.get(2), np.ones(4))
    conditioned, probability = model.conditioned(evidence)
    assert probability == pytest.approx(weighted.sum(), rel=1e-9)
    assert np.allclose(_fpt_joint(conditioned), weighted / weighted.sum(), atol=1e-12)
    rows = model.sample_codes(200_000, np.random.default_rng(1))  # the sampler refines given the target's range
    assert _tvd(_histogram(rows, model.code_sizes), joint) < 0.01


def test_independent_conditions_each_column_and_multiplies_the_probabilities():
    model = IndependentModel([np.array([0.2, 0.8]), np.array([0.5, 0.25, 0.25])], 100)
    conditioned, probability = model.conditioned(Evidence({1: np.array([0, 1, 0.5])}))
    assert probability == pytest.approx(0.375)
    assert conditioned.probabilities[0].tolist() == [0.2, 0.8]
    assert conditioned.probabilities[1] == pytest.approx([0, 2 / 3, 1 / 3])


def _splice_model():
    rng = np.random.default_rng(0)
    k = 3
    block = GaussianBlock(columns=(1, 3), mean=rng.normal(scale=0.5, size=(k, 2)), factor=rng.normal(scale=0.4, size=(k, 2, 1)),
                          diag=np.full((k, 2), 0.1), edges=(np.linspace(-1, 1, 5), np.linspace(-1, 1, 4)),
                          calibration=(np.array([0.1, 0.4, 0.3, 0.2]), np.array([0.5, 0.3, 0.2])), null_share=(0.1, 0.0))
    return SpliceModel(np.array([0.5, 0.3, 0.2]), [rng.dirichlet(np.ones(3), k), rng.dirichlet(np.ones(4), k)], 1000, block)


@pytest.fixture(scope="module")
def splice_reference():
    """Many unconditioned rows (batch ranks tend to the model's CDF) to reject from."""
    model = _splice_model()
    return model, np.concatenate([model.sample_codes(300_000, np.random.default_rng(s)) for s in range(3)])


@pytest.mark.parametrize("weights", [
    {0: [1, 0, 1.0]},  # a code-modelled column
    {1: [0, 0.5, 1, 0, 1.0]},  # a Gaussian column, partial bins and its null code
    {1: [0, 0.5, 1, 0, 0.0], 2: [1, 0, 1, 0.0]},  # both kinds
    {3: [0, 0.3, 1.0]},
], ids=["code column", "gaussian column", "both", "other gaussian column"])
def test_splice_conditions_like_rejection_from_the_unconditioned_model(splice_reference, weights):
    model, rows = splice_reference
    evidence = Evidence({j: np.array(w) for j, w in weights.items()})
    accepted = np.random.default_rng(9).random(len(rows)) < evidence.row_weights(rows)
    conditioned, probability = model.conditioned(evidence)
    assert probability == pytest.approx(accepted.mean(), abs=0.003)
    drawn = conditioned.sample_codes(300_000, np.random.default_rng(3))
    assert evidence.row_weights(drawn).min() > 0
    sizes = [3, 5, 4, 3]
    assert _tvd(_histogram(drawn, sizes), _histogram(rows[accepted], sizes)) < 0.02


def test_splice_conditions_on_two_gaussian_columns_like_rejection(splice_reference):
    model, rows = splice_reference
    evidence = Evidence({1: np.array([0, 1, 1, 0.5, 0.0]), 3: np.array([0.2, 0, 1.0]), 0: np.array([1, 0, 1.0])})
    accepted = np.random.default_rng(9).random(len(rows)) < evidence.row_weights(rows)
    conditioned, probability = model.conditioned(evidence)
    assert conditioned.others and probability == pytest.approx(accepted.mean(), rel=0.05)
    drawn = conditioned.sample_codes(100_000, np.random.default_rng(3))
    assert len(drawn) == 100_000 and evidence.row_weights(drawn).min() > 0
    assert _tvd(_histogram(drawn, [3, 5, 4, 3]), _histogram(rows[accepted], [3, 5, 4, 3])) < 0.03


def test_dgm_conditions_each_partition_and_its_columns_follow_the_conditioned_partition_model():
    left = IndependentModel([np.array([0.3, 0.7]), np.array([0.1, 0.2, 0.7])], 100)
    right = IndependentModel([np.array([0.6, 0.4])], 100)
    model = DgmModel(3, [(0, 2), (1,)], ["independent", "independent"], [left, right], None, JoinSettings())
    evidence = Evidence({1: np.array([0.0, 1.0]), 2: np.array([1.0, 0.0, 0.5])})
    conditioned, probability = model.conditioned(evidence)
    assert probability == pytest.approx(0.4 * (0.1 + 0.35))
    rows = conditioned.sample_codes(20_000, np.random.default_rng(0))
    assert (rows[:, 1] == 1).all() and set(rows[:, 2]) == {0, 2}
    assert np.mean(rows[:, 2] == 0) == pytest.approx(0.1 / 0.45, abs=0.01)


# ---- plans: probabilities, rare conditions, strata -----------------------------------------------------
def _independent_for(schema, rare: float = 0.0):
    probabilities = [np.full(c.size, 1.0 / c.size) for c in schema]
    if rare:
        probabilities[0] = np.array([1 - rare, rare])
    return IndependentModel(probabilities, 10_000)


def test_a_condition_the_model_gives_no_probability_is_refused_with_its_probability():
    schema = _schema()
    model = _independent_for(schema)
    model.probabilities[3] = np.array([1.0, 0, 0, 0])
    with pytest.raises(ConditionError, match=r"band = 5.*probability 0 "):
        sampling_plan(model, schema, 100, parse_condition("band = 5", schema))
    with pytest.raises(ConditionError, match="probability"):
        sampling_plan(model, schema, 100, parse_condition("income > 2000", schema))  # outside the bounds


def test_a_rare_condition_gives_every_asked_row_without_rejection():
    schema = _schema()
    plan = sampling_plan(_independent_for(schema, rare=1e-4), schema, 100_000,
                         parse_condition("sex = 'Female' AND income > 990.5", schema))
    assert plan.probability == pytest.approx(1e-4 * (9.5 / 200) / 5)
    codes, _ = plan.sample_counted(np.arange(100_000), np.random.default_rng(0), False, {})
    frame = decode_codes(codes, schema, np.random.default_rng(1), plan.within)
    assert len(frame) == 100_000 and (frame["sex"] == "Female").all() and (frame["income"] > 990.5).all()


def test_decoded_rows_satisfy_the_condition_on_every_kind_of_column():
    schema = _schema()
    text = ("age BETWEEN 30 AND 33 AND income > 123.456 AND income <= 130 AND band IN (1, 3) "
            "AND visit >= '2020-03-15' AND member = FALSE")
    plan = sampling_plan(_independent_for(schema), schema, 5000, parse_condition(text, schema))
    codes, _ = plan.sample_counted(np.arange(5000), np.random.default_rng(0), False, {})
    frame = decode_codes(codes, schema, np.random.default_rng(1), plan.within)
    assert frame["age"].between(30, 33).all() and set(frame["age"]) == {30, 31, 32, 33}
    assert (frame["income"] > 123.456).all() and (frame["income"] <= 130).all()
    assert (frame["income"].round(2) == frame["income"]).all()  # decimals: 2, kept inside the condition
    assert frame["band"].isin([1, 3]).all() and (~frame["member"].astype(bool)).all()
    assert (pd.to_datetime(frame["visit"]) >= pd.Timestamp("2020-03-15")).all()


def test_rows_per_gives_each_value_its_model_share_exactly_and_adds_up():  # 500.5, 300.3, 200.2: 501, 300, 200
    schema = _schema()
    model = _independent_for(schema)
    model.probabilities[3] = np.array([0.5, 0.3, 0.2, 0.0])
    plan = sampling_plan(model, schema, 1001, parse_condition("sex = 'Male'", schema), rows_per="band")
    codes, _ = plan.sample_counted(np.arange(1001), np.random.default_rng(0), False, {})
    assert np.bincount(codes[:, 3], minlength=4).tolist() == [501, 300, 200, 0] and (codes[:, 0] == 0).all()
    with pytest.raises(ConditionError, match="categorical"):
        sampling_plan(model, schema, 10, rows_per="income")
    with pytest.raises(ConditionError, match="no column"):
        sampling_plan(model, schema, 10, rows_per="nope")


def test_a_plain_plan_draws_the_same_rows_as_the_model():
    schema = _schema()
    model = _independent_for(schema)
    plan = sampling_plan(model, schema, 500)
    codes, _ = plan.sample_counted(np.arange(500), np.random.default_rng(4), False, {})
    assert np.array_equal(codes, model.sample_codes(500, np.random.default_rng(4)))


@pytest.mark.parametrize("lp", [False, True], ids=["junction tree", "LP histogram"])
def test_fpt_saved_state_loads_as_the_same_kind_of_model_with_the_same_rows(lp):
    model = _fpt_model(lp)
    schema = schema_from_dict({"columns": [{"name": f"c{j}", "type": "categorical", "nullable": False,
                                            "categories": [f"v{i}" for i in range(size)]}
                                           for j, size in enumerate(model.code_sizes)]})
    again = FptModel.from_state(model.to_state(), schema)
    assert type(again) is type(model)
    assert np.array_equal(again.sample_codes(500, np.random.default_rng(2)), model.sample_codes(500, np.random.default_rng(2)))


def test_fpt_rare_condition_draws_every_row_inside_it():
    model = _fpt_model(False)
    evidence = Evidence({0: np.array([2e-4, 0.0, 0.0]), 3: np.array([0.0, 1.0, 1.0, 1.0])})
    conditioned, probability = model.conditioned(evidence)
    assert 1e-6 < probability < 2e-4
    rows = conditioned.sample_codes(100_000, np.random.default_rng(0))
    assert (rows[:, 0] == 0).all() and (rows[:, 3] != 0).all()
