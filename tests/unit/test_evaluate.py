"""Evaluation metrics on cases whose answer is known (no Spark: the numpy/pandas building blocks)."""

import itertools

import numpy as np
import pandas as pd
import pytest

from spark_synth.errors import ParameterError
from spark_synth.evaluate import association, distance, fidelity, privacy, profile, utility
from spark_synth.evaluate.encoding import PublicEncoder
from spark_synth.schema import Column, ColumnType, OutOfDomainPolicy, Schema, encode_frame
from tests.helpers import tiny_frame, tiny_schema


def _pair_counts(frame, schema):
    codes, _ = encode_frame(frame[list(schema.names)], schema, OutOfDomainPolicy.CLIP)
    out = {}
    for a, b in itertools.combinations(range(len(schema)), 2):
        shape = (schema.columns[a].size, schema.columns[b].size)
        cells = np.ravel_multi_index((codes[:, a], codes[:, b]), shape)
        out[(schema.names[a], schema.names[b])] = np.bincount(cells, minlength=shape[0] * shape[1]).reshape(shape)
    return out


def _matrix(frame, schema):
    return association.association_matrix(schema, _pair_counts(frame, schema), profile.partial_stats(frame, profile.make_plan(schema)))


def dependent_frame(n=3000, seed=0):
    """colour drives size, age and score: every pair is associated."""
    rng = np.random.default_rng(seed)
    k = rng.integers(0, 3, n)
    return pd.DataFrame({
        "colour": np.array(["red", "green", "blue"], dtype=object)[k],
        "size": pd.array(k + 1, dtype="Int64"),
        "age": pd.array(np.clip(3 * k + rng.integers(0, 2, n), 0, 9), dtype="Int64"),
        "score": np.clip(0.3 * k + 0.1 * rng.random(n), 0, 1),
    })


def shuffled_columns(frame, seed=1):
    rng = np.random.default_rng(seed)
    return pd.DataFrame({c: frame[c].to_numpy()[rng.permutation(len(frame))] for c in frame.columns})


# ---- TVD -----------------------------------------------------------------------------------
def test_tvd_known_values():
    assert fidelity.tvd(np.array([3, 1, 0]), np.array([30, 10, 0])) == 0.0
    assert fidelity.tvd(np.array([5, 0]), np.array([0, 7])) == pytest.approx(1.0)
    assert fidelity.tvd(np.array([1, 1]), np.array([1, 0])) == pytest.approx(0.5)


def test_marginal_fidelity_identical_is_zero_and_shuffle_keeps_one_way():
    schema = fidelity.evaluation_schema(tiny_schema(), 4)
    frame = dependent_frame()
    sets = fidelity.column_sets(schema)
    counts = lambda f: {**{(n,): c.sum(axis=1) for (n, _), c in _pair_counts(f, schema).items()},  # noqa: E731
                        **{("score",): _pair_counts(f, schema)[("colour", "score")].sum(axis=0)},
                        **_pair_counts(f, schema)}
    same = fidelity.marginal_fidelity(counts(frame), counts(frame), {1: sets[1], 2: sets[2]})
    assert same["1way"]["tvd_max"] == 0.0 and same["2way"]["tvd_max"] == 0.0
    shuffled = fidelity.marginal_fidelity(counts(frame), counts(shuffled_columns(frame)), {1: sets[1], 2: sets[2]})
    assert shuffled["1way"]["tvd_max"] == pytest.approx(0.0, abs=1e-12)
    assert shuffled["2way"]["tvd_mean"] > 0.3


def test_column_sets_sample_triples_deterministically():
    schema = Schema(columns=tuple(Column(f"c{i}", ColumnType.CATEGORICAL, categories=("a", "b")) for i in range(8)))
    sets = fidelity.column_sets(schema, max_triples=10, seed=3)
    assert len(sets[1]) == 8 and len(sets[2]) == 28 and len(sets[3]) == 10
    assert sets[3] == fidelity.column_sets(schema, max_triples=10, seed=3)[3]
    assert sets[3] != fidelity.column_sets(schema, max_triples=10, seed=4)[3]
    assert len(fidelity.column_sets(schema, max_triples=1000)[3]) == 56


def test_evaluation_schema_coarsens_numeric_bins_only():
    schema = fidelity.evaluation_schema(Schema(columns=(
        Column("age", ColumnType.INTEGER, min=17, max=90), Column("x", ColumnType.CONTINUOUS, min=0, max=1, bins=8),
        Column("c", ColumnType.CATEGORICAL, categories=tuple("abcdefghij")))), 16)
    assert schema["age"].n_values == 16 and schema["x"].n_values == 8 and schema["c"].n_values == 10
    with pytest.raises(ParameterError, match="numeric_bins"):
        fidelity.evaluation_schema(schema, 1)


# ---- association ---------------------------------------------------------------------------
def test_association_measures_known_values():
    assert association.cramers_v(np.array([[50, 0], [0, 50]])) == pytest.approx(1.0)
    assert association.cramers_v(np.array([[25, 25], [25, 25]])) == pytest.approx(0.0)
    x = np.arange(10.0)
    assert association.pearson(10, x.sum(), (2 * x).sum(), (x * x).sum(), (4 * x * x).sum(), (2 * x * x).sum()) == pytest.approx(1.0)
    # numeric fully determined by the category -> eta 1; same mean in every category -> 0
    assert association.correlation_ratio(np.array([2, 2.]), np.array([0, 4.]), np.array([0, 8.])) == pytest.approx(1.0)
    assert association.correlation_ratio(np.array([2, 2.]), np.array([2, 2.]), np.array([4, 4.])) == pytest.approx(0.0)


def test_association_identical_zero_and_shuffled_copy_differs():
    schema = tiny_schema()
    frame = dependent_frame()
    real = _matrix(frame, schema)
    assert np.allclose(np.diag(real), 1.0) and real[0, 1] > 0.9  # colour -> size is deterministic
    same = association.association_difference(real, _matrix(frame.copy(), schema), list(schema.names))
    assert same["abs_diff_max"] == 0.0
    shuffled = association.association_difference(real, _matrix(shuffled_columns(frame), schema), list(schema.names))
    assert shuffled["abs_diff_mean"] > 0.5


# ---- distances -----------------------------------------------------------------------------
def test_sliced_wasserstein_known_shift():
    schema = Schema(columns=(Column("x", ColumnType.CONTINUOUS, min=0.0, max=1.0, nullable=False),))
    plan = profile.make_plan(schema, projections=8, bins=1000)
    zeros, ones = pd.DataFrame({"x": np.zeros(100)}), pd.DataFrame({"x": np.ones(100)})
    a, b = profile.partial_stats(zeros, plan), profile.partial_stats(ones, plan)
    assert distance.sliced_wasserstein(a, a, plan)["sliced_w1"] == 0.0
    # 1-D encoding: every unit direction is ±1, so the projections are 1 apart.
    assert distance.sliced_wasserstein(a, b, plan)["sliced_w1"] == pytest.approx(1.0, abs=2e-3)


def test_mmd_identical_zero_and_shifted_positive():
    rng = np.random.default_rng(0)
    x = rng.random((300, 4))
    assert distance.mmd(x, x.copy())["mmd"] == 0.0
    assert distance.mmd(x, x + 0.5)["mmd"] > 0.3
    assert distance.mmd(x, rng.random((300, 4)))["mmd"] < 0.15


def test_public_encoding_distances():
    schema = tiny_schema()
    enc = PublicEncoder(schema)
    frame = pd.DataFrame({"colour": ["red", "green", None], "size": [1, 1, 1], "age": [0, 0, 9], "score": [0.5, 0.5, None]})
    x = enc.transform(frame)
    assert x.shape == (3, enc.width) and x.min() >= 0 and x.max() <= 1
    assert np.linalg.norm(x[0] - x[1]) == pytest.approx(1.0)  # one category differs
    assert x[2, enc.slices["score"]].tolist() == [0.0, 1.0]  # null indicator
    assert x[2, enc.slices["age"]].tolist() == [1.0, 0.0]


# ---- privacy proxies ------------------------------------------------------------------------
def test_privacy_proxies_copy_of_train_is_flagged():
    rng = np.random.default_rng(0)
    train, holdout = rng.random((400, 5)), rng.random((400, 5))
    out = privacy.privacy_proxies(train, holdout, train.copy())
    assert out["dcr_train_median"] == 0.0 and out["dcr_holdout_median"] > 0
    assert out["share_closer_to_train"] == 1.0 and out["share_exact_copies_of_train"] == 1.0
    assert out["membership_auc"] == 1.0
    assert out["identification_risk"] == 1.0  # every train row has its copy at distance 0
    # the forest memorised the synthetic rows it saw (half of train): members are flagged more often than the rest
    assert out["mia_recall"] > 0.65 and out["mia_precision"] > 0.58


def test_nearest_other_distance_skips_the_row_itself_but_not_its_duplicates():
    points = np.array([[0.0, 0.0], [0.0, 0.0], [3.0, 4.0], [6.0, 8.0]])
    assert privacy.nearest_other_distances(points, chunk=3).tolist() == [0.0, 0.0, 5.0, 5.0]


def test_entropy_weights_are_one_over_each_columns_entropy():
    train = np.array([[0.0, 1.0, 0.5, 0.0], [0.0, 0.0, 0.5, 1.0]] * 50)
    w = privacy.entropy_weights(train, {"constant": slice(0, 1), "flag": slice(1, 2), "one_hot": slice(2, 4)})
    assert w[0] == 1.0  # zero entropy: unweighted
    assert w[1] == pytest.approx(1 / np.log(2)) and w[2] == w[3] == pytest.approx(1 / np.log(2))  # one column, two values
    assert privacy.entropy_weights(train, None)[3] == pytest.approx(1 / np.log(2))


def test_privacy_proxies_fresh_sample_looks_like_holdout():
    rng = np.random.default_rng(1)
    train, holdout, fresh = rng.random((2000, 3)), rng.random((2000, 3)), rng.random((2000, 3))
    out = privacy.privacy_proxies(train, holdout, fresh)
    assert out["share_closer_to_train"] == pytest.approx(0.5, abs=0.05)
    assert out["membership_auc"] == pytest.approx(0.5, abs=0.05)
    assert out["share_exact_copies_of_train"] == 0.0
    assert out["identification_risk"] == pytest.approx(0.5, abs=0.05)  # a fresh row is as close as another train row
    assert out["mia_precision"] == pytest.approx(0.5, abs=0.06)  # the attack cannot tell members from non-members


# ---- utility --------------------------------------------------------------------------------
def _learnable(n, seed):
    frame = tiny_frame(n, seed)
    frame["colour"] = np.where(frame["score"] > 0.5, "red", np.where(frame["age"].astype(int) > 4, "green", "blue")).astype(object)
    return frame


def test_tstr_on_real_data_equals_trtr_classification():
    schema = tiny_schema()
    train, holdout = _learnable(1500, 0), _learnable(500, 1)
    out = utility.utility(train, holdout, train.copy(), schema, "colour", seed=0)
    assert out["task"] == "classification" and set(out["learners"]) == {"logistic_regression", "random_forest", "xgboost"}
    for scores in out["learners"].values():
        assert scores["tstr"] == scores["trtr"]
    assert out["best"]["trtr"]["auroc"] > 0.95  # the label is a function of the features
    noise = train.copy()
    noise["colour"] = np.random.default_rng(5).choice(["red", "green", "blue"], len(noise)).astype(object)
    assert utility.utility(train, holdout, noise, schema, "colour")["best"]["tstr"]["auroc"] < 0.7


def test_tstr_on_real_data_equals_trtr_regression():
    schema = tiny_schema()
    frame = tiny_frame(1200, 2)
    frame["score"] = np.clip(frame["age"].astype(float) / 10 + 0.01 * np.random.default_rng(0).random(1200), 0, 1)
    out = utility.utility(frame.iloc[:900], frame.iloc[900:], frame.iloc[:900].copy(), schema, "score")
    assert out["task"] == "regression" and out["primary_metric"] == "r2"
    for scores in out["learners"].values():
        assert scores["tstr"] == scores["trtr"]
    assert out["best"]["trtr"]["r2"] > 0.9


def test_single_class_synthetic_does_not_crash():
    schema = tiny_schema()
    train, holdout = _learnable(300, 0), _learnable(200, 1)
    constant = train.copy()
    constant["colour"] = "red"
    out = utility.utility(train, holdout, constant, schema, "colour")
    assert out["learners"]["xgboost"]["tstr"]["auroc"] == pytest.approx(0.5)


def test_bad_target_names_the_parameter():
    with pytest.raises(ParameterError, match="parameter 'target'"):
        utility.check_target(tiny_schema(), "nope")
    with pytest.raises(ParameterError, match="parameter 'target'"):
        utility.check_target(tiny_schema(), None)


def test_hierarchy_fidelity_compares_each_level_on_summed_counts():
    from spark_synth.evaluate.fidelity import hierarchy_fidelity
    from spark_synth.schema import schema_from_dict

    schema = schema_from_dict({"columns": [{"name": "c", "type": "categorical", "categories": ["a", "b", "x"],
                                            "hierarchy": [{"name": "g", "parents": {"a": "A", "b": "A", "x": "X"}}]}]})
    real = np.array([10.0, 0.0, 10.0, 0.0])  # a, b, x, null
    synthetic = np.array([0.0, 10.0, 10.0, 0.0])  # a and b swapped: wrong codes, right groups
    levels = hierarchy_fidelity(schema, {("c",): real}, {("c",): synthetic})["c"]
    assert levels == {"code": pytest.approx(0.5), "g": pytest.approx(0.0)}


# ---- baselines ------------------------------------------------------------------------------
def test_independent_fidelity_is_zero_for_independent_counts_and_large_for_dependent_ones():
    a, b = np.array([30.0, 10.0]), np.array([5.0, 15.0, 20.0])
    sets = {1: [("a",), ("b",)], 2: [("a", "b")]}
    independent = {("a",): a, ("b",): b, ("a", "b"): np.outer(a, b) / a.sum()}
    exact = fidelity.independent_fidelity(independent, sets)
    assert exact["1way"]["tvd_max"] == 0.0 and exact["2way"]["tvd_max"] == pytest.approx(0.0, abs=1e-12)
    diagonal = {("a",): np.array([50.0, 50.0]), ("b",): np.array([50.0, 50.0]), ("a", "b"): np.diag([50.0, 50.0])}
    assert fidelity.independent_fidelity(diagonal, {1: [("a",), ("b",)], 2: [("a", "b")]})["2way"]["tvd_mean"] == pytest.approx(0.5)
    # at a row count: a seeded draw of that many rows (sampling error > 0, shrinking with the rows)
    drawn = [fidelity.independent_fidelity(independent, sets, rows=n, seed=1)["1way"]["tvd_mean"] for n in (100, 100_000)]
    assert drawn[0] > drawn[1] > 0 and drawn[0] == fidelity.independent_fidelity(independent, sets, rows=100, seed=1)["1way"]["tvd_mean"]


def test_privacy_baselines_hold_out_scores_about_half_and_copies_do_not_move_it():
    rng = np.random.default_rng(2)
    train, holdout = rng.random((1500, 3)), rng.random((1500, 3))
    out = privacy.privacy_proxies(train, holdout, train.copy())
    assert out["identification_risk"] == 1.0
    assert out["identification_risk_holdout"] == pytest.approx(0.5, abs=0.05)  # fresh rows: the synthetic copy is no help
    assert out["identification_risk_independent"] < 0.7 and 0.4 < out["membership_auc_independent"] < 0.6
    shuffled = privacy.independent_reference(train, {"x": slice(0, 2), "y": slice(2, 3)}, seed=0)
    assert sorted(map(tuple, shuffled[:, :2])) == sorted(map(tuple, train[:, :2]))  # a column's coordinates move together
    assert not np.array_equal(shuffled, train)


def test_utility_independent_reference_loses_the_target():
    schema = tiny_schema()
    train, holdout = _learnable(1500, 0), _learnable(500, 1)
    out = utility.utility(train, holdout, train.copy(), schema, "colour", seed=0)
    assert out["best"]["independent"]["auroc"] < 0.65 < out["best"]["trtr"]["auroc"]
    assert "independent" not in utility.utility(train, holdout, train.copy(), schema, "colour", independent=False)["best"]


def test_table_names_from_inputs():
    from spark_synth.evaluate.core import table_label, table_name_of

    assert table_label("/data/adult_sample.csv") == "adult_sample" and table_label("s3://b/x/sales.delta/") == "sales"
    assert table_label("main.finance.payments") == "main.finance.payments" and table_label("out1") == "out1"

    class Frame:
        def __init__(self, files):
            self.files = files

        def inputFiles(self):
            if self.files is None:
                raise RuntimeError("no files")
            return self.files

    assert table_name_of(Frame(["file:///d/adult_sample.csv"])) == "adult_sample"
    assert table_name_of(Frame(["file:///w/payments/day=1/part-0.parquet", "file:///w/payments/day=2/part-0.parquet"])) == "payments"
    assert table_name_of(Frame(["dbfs:/w/t.parquet/part-00000-x.snappy.parquet"])) == "t"
    assert table_name_of(Frame([])) is None and table_name_of(Frame(None)) is None


# ---- report ---------------------------------------------------------------------------------
def _stub_evaluation(schema, one_way, report=None):
    from types import SimpleNamespace

    by_column = {name: fidelity.tvd(real, synth) for name, (real, synth) in one_way.items()}
    metrics = {"marginals": {"1way": {"by_column": by_column}, "numeric_bins": 4}}
    return SimpleNamespace(metrics=metrics, schema=schema, details={"one_way": one_way, "eval_schema": schema,
                                                                    "privacy_report": report})


def test_report_columns_show_labels_whole_and_null_rows_only_where_there_are_nulls():
    from spark_synth.evaluate.report import _columns

    long = "Credit card (any kind, including store and charge cards)"
    schema = Schema(columns=(Column("pay", ColumnType.CATEGORICAL, categories=("cash", long)),
                             Column("n", ColumnType.INTEGER, min=0, max=3),
                             Column("x", ColumnType.CONTINUOUS, min=0.0, max=1.0, bins=4)))
    one_way = {"pay": (np.array([5.0, 5.0, 0.0]), np.array([4.0, 6.0, 0.0])),  # no nulls in either table
               "n": (np.array([1.0, 2.0, 3.0, 4.0, 0.0]), np.array([1.0, 2.0, 3.0, 3.0, 1.0])),  # synthetic nulls
               "x": (np.array([1.0, 1.0, 1.0, 1.0, 2.0]), np.array([1.0, 1.0, 1.0, 1.0, 0.0]))}  # real nulls
    html = _columns(_stub_evaluation(schema, one_way))
    assert f"<div class=label>{long}</div>" in html and f'title="{long}: real 50.0%, synthetic 60.0%"' in html
    cards = {name: html[html.index(f'id="col-{name}"'):] for name in ("pay", "n", "x")}
    assert "null (missing)" not in cards["pay"][:cards["pay"].index('id="col-n"')]
    assert "null (missing)" in cards["n"][:cards["n"].index('id="col-x"')] and "null (missing)" in cards["x"]
    assert 'title="0: real 10.0%' in html  # integer bins read as their values


def test_report_budget_groups_releases_of_one_kind():
    from spark_synth.evaluate.report import _budget
    from spark_synth.privacy.report import PrivacyReport, ReportEntry

    entries = tuple(ReportEntry(kind="measurement", name=f"marginal[colour, {c}]", query="counts", mechanism="Gaussian",
                                rho=0.01, sigma=3.0) for c in ("size", "age", "score")) + (
        ReportEntry(kind="measurement", name="marginal[colour]", query="counts", mechanism="Gaussian", rho=0.02, sigma=2.0,
                    scope="partition[3]"),)
    report = PrivacyReport(fit_id="f", epsilon_requested=1.0, delta=1e-9, rho_requested=0.05, entries=entries)
    html = _budget(_stub_evaluation(tiny_schema(), {}, report))
    assert html.count("<tr><td>marginal[2 columns]</td>") == 1 and "partition[*]/marginal[1 column]" in html
    assert "every release, in order (4)" in html and "60.0%" in html
