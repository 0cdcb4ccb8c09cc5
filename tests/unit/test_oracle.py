"""The measurement oracle (over pandas here; over Spark in tests/integration/test_seam.py)."""

import math

import numpy as np
import pytest

import spark_synth.oracle as oracle_module
from spark_synth.errors import BudgetExhausted, ParameterError, UserInputError
from spark_synth.measure import answer_frame
from spark_synth.oracle import oracle_over_frame
from spark_synth.privacy import PrivacyBudget, PrivacyFilter
from spark_synth.queries import MarginalQuery, MomentQuery
from tests.helpers import tiny_frame, tiny_schema

SCHEMA, FRAME = tiny_schema(), tiny_frame(400)


def _oracle(epsilon=1.0):
    privacy_filter, clock = PrivacyFilter(PrivacyBudget(epsilon, 1e-9)), {}
    return oracle_over_frame(FRAME, SCHEMA, privacy_filter, timings=clock), privacy_filter, clock


def test_a_batch_of_mixed_kinds_is_answered_in_one_scan_and_cached():
    oracle, privacy_filter, clock = _oracle()
    moments = MomentQuery(name="m", directions=np.full((3, 10), 0.05), degree=4)
    queries = [MarginalQuery(("colour",)), MarginalQuery(("size", "age")), moments]
    rhos = [privacy_filter.rho_total / 8] * 3
    out = oracle.measure_many(list(zip(queries, rhos)))
    assert clock["scans"] == 1
    assert [m.query for m in out] == queries and [m.values.shape for m in out] == [(4,), (4, 11), (3, 4)]
    oracle.measure(MarginalQuery(("size", "age"), name="again"), rhos[0])  # same columns: no new scan
    assert clock["scans"] == 1
    report = privacy_filter.report()
    assert [e.name for e in report.entries] == ["marginal[colour]", "marginal[size, age]", "m", "again"]
    assert report.entries[2].sigma == pytest.approx(moments.integer_l2_sensitivity / moments.unit / math.sqrt(2 * rhos[2]), rel=1e-9)
    assert oracle.rho_remaining == pytest.approx(privacy_filter.rho_total / 2, rel=1e-12)


def test_a_coarser_marginal_is_summed_from_a_cached_finer_one_without_a_scan():
    oracle, privacy_filter, clock = _oracle()
    size_groups, age_groups = (0, 0, 1, 2), tuple(min(v // 3, 3) for v in range(11))
    finer = MarginalQuery(("size", "age"), groupings=(None, age_groups))
    oracle.prepare([finer])
    coarse_age = tuple(min(g, 2) for g in age_groups)  # merges the finer query's groups 2 and 3
    coarser = MarginalQuery(("size", "age"), groupings=(size_groups, coarse_age))
    captured = []
    real_release = oracle_module.release_query
    oracle_module.release_query = lambda f, q, a, r: captured.append(a) or real_release(f, q, a, r)
    try:
        oracle.measure(coarser, privacy_filter.rho_total / 4)
    finally:
        oracle_module.release_query = real_release
    assert clock["scans"] == 1
    assert np.array_equal(captured[0], answer_frame(FRAME, SCHEMA, [coarser])[0])
    # a grouping that splits one of the cached groups cannot be summed from it: it needs a scan
    splitting = MarginalQuery(("size", "age"), groupings=(None, tuple(min(v // 2, 4) for v in range(11))))
    oracle.prepare([splitting])
    assert clock["scans"] == 2


def test_a_call_beyond_the_budget_is_refused_before_any_scan_and_the_report_is_unchanged():
    oracle, privacy_filter, clock = _oracle()
    oracle.measure(MarginalQuery(("colour",)), privacy_filter.rho_total * 0.9)
    before = privacy_filter.report()
    requests = [(MarginalQuery(("size",)), privacy_filter.rho_total * 0.06)] * 2  # each fits, together they do not
    with pytest.raises(BudgetExhausted, match="nothing was measured"):
        oracle.measure_many(requests)
    with pytest.raises(BudgetExhausted):
        oracle.select([MarginalQuery(("age",))], "weighted_l1", [np.zeros(11)], privacy_filter.rho_total * 0.2)
    assert clock["scans"] == 1 and privacy_filter.report().entries == before.entries
    with pytest.raises(ParameterError, match="rho of"):
        oracle.measure(MarginalQuery(("size",)), -1.0)


def test_each_measurement_and_selection_is_checked_once(monkeypatch):
    oracle, privacy_filter, clock = _oracle()
    events = []
    real_fits = PrivacyFilter._refuse_unless_fits
    monkeypatch.setattr(PrivacyFilter, "_refuse_unless_fits", lambda self, *a: events.append("check") or real_fits(self, *a))
    rho = privacy_filter.rho_total / 8
    oracle.measure_many([(MarginalQuery(("colour",)), rho), (MarginalQuery(("size",)), rho), (MarginalQuery(("age",)), rho)])
    assert events == ["check"] and clock["scans"] == 1 and len(privacy_filter.report().entries) == 3
    oracle.measure(MarginalQuery(("colour", "size")), rho)
    oracle.select([MarginalQuery(("colour",)), MarginalQuery(("size",))], "weighted_l1", [np.zeros(4), np.zeros(4)], rho)
    assert events == ["check"] * 3  # one per call: measure, select; the batch of three once


def test_a_failed_scan_spends_nothing():
    privacy_filter = PrivacyFilter(PrivacyBudget(1.0, 1e-9))

    def failing(queries):
        raise RuntimeError("the scan failed")

    oracle = oracle_module.build_oracle(SCHEMA, privacy_filter, failing)
    with pytest.raises(RuntimeError):
        oracle.measure_many([(MarginalQuery(("colour",)), privacy_filter.rho_total / 2)] * 2)
    with pytest.raises(RuntimeError):
        oracle.select([MarginalQuery(("colour",))], "weighted_l1", [np.zeros(4)], privacy_filter.rho_total)
    assert privacy_filter.rho_remaining == privacy_filter.rho_total and privacy_filter.report().entries == ()


def test_select_scores_weighted_l1_error_with_derived_sensitivity_and_charges_its_rho(monkeypatch):
    oracle, privacy_filter, _ = _oracle()
    candidates = [MarginalQuery(("colour",)), MarginalQuery(("size",)), MarginalQuery(("colour", "size"))]
    exact = answer_frame(FRAME, SCHEMA, candidates)
    model = [np.full(e.shape, e.sum() / e.size) for e in exact]
    seen = {}
    original = oracle_module.select_index

    def spy(privacy_filter_, scores, sensitivity, rho, **kwargs):
        seen.update(scores=scores, sensitivity=sensitivity)
        return original(privacy_filter_, scores, sensitivity, rho, **kwargs)

    monkeypatch.setattr(oracle_module, "select_index", spy)
    rho = privacy_filter.rho_total / 4
    chosen = oracle.select(candidates, "weighted_l1", model, rho, weights=[1.0, 2.0, 0.5], offsets=[0.0, 1.0, 3.0])
    expected = [w * np.abs(e - m).sum() - o for e, m, w, o in zip(exact, model, [1.0, 2.0, 0.5], [0.0, 1.0, 3.0])]
    assert np.allclose(seen["scores"], expected) and seen["sensitivity"] == 2.0  # max weight × ℓ1 sensitivity 1
    assert chosen in candidates
    (entry,) = privacy_filter.report().selections
    assert entry.rho <= rho and entry.rho == pytest.approx(rho, rel=1e-12) and entry.candidates == 3
    assert entry.scale == pytest.approx(2.0 / math.sqrt(2 * rho), rel=1e-9) and entry.score_sensitivity == 2.0


def test_select_with_a_large_budget_picks_the_worst_answered_candidate():
    oracle, privacy_filter, _ = _oracle(epsilon=200.0)
    candidates = [MarginalQuery(("colour",)), MarginalQuery(("size",)), MarginalQuery(("age",))]
    exact = answer_frame(FRAME, SCHEMA, candidates)
    model = [e.astype(float) for e in exact]
    model[2] = np.roll(model[2], 3)  # the model answers `age` badly
    picks = [oracle.select(candidates, "weighted_l2", model, privacy_filter.rho_total / 20) for _ in range(10)]
    assert all(p == candidates[2] for p in picks)


@pytest.mark.parametrize("kwargs, fragment", [
    (dict(score_kind="max_error"), "score_kind"),
    (dict(model_answers=[np.zeros(3)]), "model answer"),
    (dict(weights=[-1.0]), "weights"),
    (dict(weights=[0.0]), "weights"),
    (dict(offsets=[float("nan")]), "offsets"),
    (dict(candidates=[]), "candidates"),
])
def test_select_refuses_bad_arguments_without_spending(kwargs, fragment):
    oracle, privacy_filter, _ = _oracle()
    args = dict(candidates=[MarginalQuery(("colour",))], score_kind="weighted_l1", model_answers=[np.zeros(4)], rho=0.01)
    args.update(kwargs)
    with pytest.raises(ParameterError, match=fragment):
        oracle.select(args.pop("candidates"), args.pop("score_kind"), args.pop("model_answers"), args.pop("rho"), **args)
    assert privacy_filter.report().entries == ()


def test_child_oracles_hold_fixed_shares_and_report_under_the_parent():
    oracle, privacy_filter, clock = _oracle()
    total = oracle.rho_total
    left, right = oracle.child(total / 2, "partition[0]"), oracle.child(total / 2, "partition[1]")
    assert oracle.rho_remaining == pytest.approx(0.0, abs=1e-15) and left.rho_total == total / 2
    left.measure(MarginalQuery(("colour",)), total / 2)
    right.measure(MarginalQuery(("colour",)), total / 4)
    with pytest.raises(BudgetExhausted):
        left.measure(MarginalQuery(("size",)), total / 100)
    with pytest.raises(BudgetExhausted):
        oracle.measure(MarginalQuery(("size",)), total / 100)
    report = privacy_filter.report()
    assert [e.scope for e in report.entries] == ["partition[0]", "partition[1]"]
    assert report.rho_spent == pytest.approx(0.75 * total, rel=1e-12) and clock["scans"] == 1  # children share the cache


def test_unknown_columns_fail_before_anything_is_spent():
    oracle, privacy_filter, clock = _oracle()
    with pytest.raises(UserInputError, match="nope"):
        oracle.measure(MarginalQuery(("nope",)), 0.01)
    assert privacy_filter.report().entries == () and "scans" not in clock
