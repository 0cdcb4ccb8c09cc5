"""Privacy audit of the unit relation (issue 49, item 4): "add/remove one unit of `uid`, at most K rows each".

The guarantee under ``--privacy-unit uid --max-rows-per-unit K`` rests on two facts, audited here
with the machinery of the row-level audit (imported from its modules, not copied):

* **stability of contribution bounding** (:mod:`spark_synth.measure.bounding`): bounding D′ = D +
  one unit of m rows keeps exactly the rows bounding D kept, plus at most K rows of the new unit —
  however many rows it has (m ∈ {1, K, K+1, 5K}) and whatever they hold (all in one cell, spread
  out, identical, extreme values) — so every exact answer moves by at most K × the query's declared
  one-row sensitivity (ℓ2 and ℓ1) and the answers of every other unit are unchanged
  (:func:`test_unit_neighbours_move_answers_by_at_most_k_sensitivities`, pandas;
  :func:`test_spark_bounding_is_stable_and_within_k_sensitivities`, Spark). A row-level change inside
  a unit changes the bounded table by at most 2 rows (one out, one in): the ledger's row-level cost
  rule for unit-level entries (:func:`test_row_level_change_moves_at_most_two_bounded_rows`);
* **K-scaled noise** (:mod:`spark_synth.privacy.mechanisms`): σ = K·Δ/√(2ρ), stated in the report
  (:func:`test_noise_scale_is_k_times_the_row_level_one`).

End to end: the coupled-noise diff of the whole CLI path with a unit of more than K rows added
(:func:`test_coupled_noise_diff_under_a_unit`), and an empirical ε lower bound for a unit of K
identical rows, with a control calibrated for one row that the same test catches
(:func:`test_empirical_epsilon_of_a_unit_stays_below_the_claim`,
:func:`test_noise_calibrated_for_one_row_is_caught`).

Three regression tests pin bugs of the bounding this audit found (fixed in
``spark_synth/measure/bounding.py``):

* :func:`test_spark_bounding_does_not_depend_on_row_order` — Spark's ``xxhash64`` skips nulls, so
  distinct rows of a unit that differ only in where their nulls are got the same priority for every
  salt, and the window had no tie-breaker: which of them was kept followed the physical row order;
* :func:`test_pandas_bounding_of_a_unit_ignores_other_units` — the pandas row hash labelled equal
  values of different types (0.0 and -0.0, 1 and True) by whichever row came first in the frame, so
  one unit's priorities depended on other units' rows;
* :func:`test_pandas_bounding_hashes_huge_integers` — the pandas row hash overflowed on a Python
  integer beyond float64, a value the measure layer accepts.
"""

from __future__ import annotations

import csv
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import tests.privacy.test_coupled_noise as coupled
from spark_synth.measure import answer_frame, answer_queries
from spark_synth.measure.bounding import bound_contributions, bound_contributions_frame
from spark_synth.privacy import PrivacyBudget, PrivacyFilter, epsilon_from_rho, release_query, rho_from_epsilon, split_rho
from spark_synth.privacy.mechanisms import release_counts, select_index
from spark_synth.privacy.unit import PrivacyUnit
from spark_synth.queries import MarginalQuery, MomentQuery
from spark_synth.schema import Column, ColumnType, OutOfDomainPolicy, Schema
from tests.privacy import test_distinguishing as distinguishing
from tests.privacy.test_adversarial_neighbours import ADVERSARIAL_SCHEMA, LIMIT, queries_for, random_rows, random_schema
from tests.privacy.test_coupled_noise import empty_store  # noqa: F401  (the module-scoped fixture, reused)

CLIP = OutOfDomainPolicy.CLIP
UID = "uid"
#: An extra column that makes rows distinct to the bounding hash while every query sees them as the same row.
SEQ = "seq"


def within_k_sensitivities(queries, small: list[np.ndarray], large: list[np.ndarray], k: int) -> None:
    """Every answer moved by at most ``k`` × the query's declared one-row sensitivity (ℓ2 and ℓ1)."""
    for query, a, b in zip(queries, small, large):
        assert a.dtype == np.int64 and np.abs(a).max(initial=0) <= LIMIT and np.abs(b).max(initial=0) <= LIMIT
        change = (b.astype(np.float64) - a.astype(np.float64)) / query.unit
        assert np.isfinite(change).all()
        assert math.sqrt(float((change**2).sum())) <= k * query.l2_sensitivity, (query.name, k)
        assert float(np.abs(change).sum()) <= k * query.l1_sensitivity, (query.name, k)


def l2_change(query, a: np.ndarray, b: np.ndarray) -> float:
    return math.sqrt(float((((b.astype(np.float64) - a.astype(np.float64)) / query.unit) ** 2).sum()))


# ---- 1. adversarial neighbours under a unit (pandas bounding) ---------------------------------------
K = 3
ROWS_ADDED = (1, K, K + 1, 5 * K)
SHAPES = ("one cell", "spread", "identical", "extreme")
#: Unit values of D: nulls (None and NaN are one unit), an empty string, numbers, text.
UNIT_VALUES = ["a", "b", "c", None, np.nan, "", 7, "a "]
N_UNIT_CASES = 192  # every (m, shape) pair 12 times


def extreme_value(rng: np.random.Generator, column: Column):
    """A value at or beyond the edge of the column's public domain (or outside it)."""
    if column.type.is_discrete:
        return [None, "unknown", column.categories[0], column.categories[-1]][rng.integers(4)]
    low, high = (int(column.min), int(column.max)) if column.type is ColumnType.INTEGER else (column.min, column.max)
    return [np.inf, -np.inf, 10**400, -(10**400), 1e308, -1e308, low, high][rng.integers(8)]


def unit_rows(rng: np.random.Generator, schema: Schema, m: int, shape: str) -> pd.DataFrame:
    """``m`` rows of one new unit, adversarial in ``shape``."""
    if shape == "spread":  # random, half of the values odd (the row-level audit's generator)
        rows = random_rows(rng, schema, m)
    elif shape == "extreme":
        rows = pd.DataFrame({c.name: [extreme_value(rng, c) for _ in range(m)] for c in schema}, dtype=object)
    else:  # one row repeated: the same cell of every marginal, the same moment contribution
        rows = pd.concat([random_rows(rng, schema, 1)] * m, ignore_index=True)
    # identical rows are identical to the hash too; "one cell" rows differ only in SEQ, which no query reads
    rows[SEQ] = 0 if shape == "identical" else np.arange(m) + 1000
    rows[UID] = "new"
    return rows


def unit_table(rng: np.random.Generator, schema: Schema, n: int) -> pd.DataFrame:
    table = random_rows(rng, schema, n)
    table[SEQ] = rng.integers(0, 3, n)  # some rows of a unit identical, some not
    table[UID] = pd.Series([UNIT_VALUES[i] for i in rng.integers(0, len(UNIT_VALUES), n)], dtype=object)
    return table


def check_stable(bounded: pd.DataFrame, bounded_prime: pd.DataFrame, n: int, m: int, k: int, where=None) -> pd.DataFrame:
    """Bounding D′ = D + a new unit (rows n.., index kept) kept exactly D's kept rows, and min(m, k)
    rows of the new unit. Returns the new unit's kept rows."""
    old = bounded_prime[bounded_prime.index < n]
    assert list(old.index) == list(bounded.index) and old.equals(bounded), f"bounding D′ changed the rows kept of D's units {where}"
    new = bounded_prime[bounded_prime.index >= n]
    assert len(new) == min(m, k), where
    return new


@pytest.mark.parametrize("block", range(2))
def test_unit_neighbours_move_answers_by_at_most_k_sensitivities(block):
    unit = PrivacyUnit(UID, K)
    bounding_mattered = 0
    for case in range(block * N_UNIT_CASES // 2, (block + 1) * N_UNIT_CASES // 2):
        rng = np.random.default_rng([case, 0x0417])
        schema = random_schema(rng)
        queries = queries_for(schema, case)
        m, shape = ROWS_ADDED[case % 4], SHAPES[(case // 4) % 4]
        n = int(rng.integers(0, 14))
        table = unit_table(rng, schema, n)
        table_prime = pd.concat([table, unit_rows(rng, schema, m, shape)], ignore_index=True)
        salt = int(rng.integers(0, 2**63))
        bounded, bounded_prime = bound_contributions_frame(table, unit, salt), bound_contributions_frame(table_prime, unit, salt)
        assert bounded.groupby(UID, dropna=False).size().max() <= K if len(bounded) else True
        new = check_stable(bounded, bounded_prime, n, m, K, (case, shape, m))
        after = answer_frame(bounded_prime, schema, queries, CLIP)
        alone = answer_frame(new, schema, queries, CLIP)
        if n == 0:  # D = ∅ is refused (documented), D′ is not: nothing to compare
            continue
        before = answer_frame(bounded, schema, queries, CLIP)
        within_k_sensitivities(queries, before, after, K)
        # the other units' answers are unchanged: D′'s answers are D's plus the new unit's kept rows' own
        assert all(np.array_equal(b, a + z) for a, b, z in zip(before, after, alone)), (case, shape, m)
        histogram = queries[0]  # the 1-way marginal of the first column: each kept row lands in one cell
        if shape in ("one cell", "identical") and m >= K:
            # the bound is reached: K rows in one cell (bounding keeps K, not fewer) ...
            assert l2_change(histogram, before[0], after[0]) == K
            if m > K:  # ... and without bounding the change would break it: m rows in that cell
                unbounded = answer_frame(table, schema, queries[:1], CLIP), answer_frame(table_prime, schema, queries[:1], CLIP)
                assert l2_change(histogram, unbounded[0][0], unbounded[1][0]) == m > K
                bounding_mattered += 1
    assert bounding_mattered >= 4  # not vacuous: cases where bounding hid rows that would break K × Δ


def test_row_level_change_moves_at_most_two_bounded_rows():
    """Removing (or adding) one row of an existing unit changes the bounded table by at most one row
    out and one row in, both of that unit — what the ledger charges a unit-level entry per row (ρ
    when K ≥ 2, 4ρ when K = 1) — and every answer by at most 2 × its one-row sensitivity."""
    changed = 0
    for case in range(40):
        rng = np.random.default_rng([case, 0x0B0])
        k = [1, 2, K][case % 3]
        unit = PrivacyUnit(UID, k)
        schema = random_schema(rng)
        queries = [MarginalQuery((c,)) for c in schema.names]
        table = unit_table(rng, schema, int(rng.integers(4, 16)))
        table[UID] = pd.Series(["p", "q", None][i] for i in rng.integers(0, 3, len(table)))  # big units: bounding bites
        salt = int(rng.integers(0, 2**63))
        bounded = bound_contributions_frame(table, unit, salt)
        for removed in table.index:
            smaller = table.drop(index=removed)
            bounded_smaller = bound_contributions_frame(smaller, unit, salt)
            out, into = set(bounded.index) - set(bounded_smaller.index), set(bounded_smaller.index) - set(bounded.index)
            assert len(out) <= 1 and len(into) <= 1 and out <= {removed}, (case, removed, out, into)
            assert all(_unit_of(table, i) == _unit_of(table, removed) for i in into)  # the removed row's unit's next row
            changed += len(out) + len(into) == 2
            if len(bounded_smaller):
                within_k_sensitivities(queries, answer_frame(bounded_smaller, schema, queries, CLIP),
                                       answer_frame(bounded, schema, queries, CLIP), 2)
        # adding a row to an existing unit: at most that row in and one of its unit's rows out
        extra = random_rows(rng, schema, 1)
        extra[SEQ], extra[UID] = 99, table[UID].iloc[0]
        bigger = pd.concat([table, extra], ignore_index=True)
        bounded_bigger = bound_contributions_frame(bigger, unit, salt)
        out, into = set(bounded.index) - set(bounded_bigger.index), set(bounded_bigger.index) - set(bounded.index)
        assert len(out) <= 1 and into <= {len(table)} and len(out) <= len(into), (case, out, into)
        assert all(_unit_of(table, i) == _unit_of(table, 0) for i in out)
    assert changed > 0  # not vacuous: removals of a kept row that let the unit's next row in


def _unit_of(table: pd.DataFrame, i) -> object:
    """Row ``i``'s unit (every null is the one null unit)."""
    value = table.at[i, UID]
    return None if pd.isna(value) else value


SPARK_ROWS = [  # (uid, cat, big, wide, rank): strings in numeric columns, NaN/±inf, nulls, unknown categories
    ("a", "a", "5", 0.0, "1"), ("a", "b", "abc", float("nan"), None), ("a", "zzz", "1e999", float("inf"), "7"),
    ("a", "b", "99999999999999999999999", float("-inf"), "2.5"), ("a", "a", "5", 0.0, "1"),
    ("b", "b", "-3", 1e308, "3"), ("b", "a", "12", -1.5, "2"), ("b", "a", "13", -1.5, "2"),
    (None, "a", "1", 2.0, "3"), (None, "b", "2", 3.0, "1"), (None, "?", "NaN", float("nan"), ""),
    ("c", "a", "0", 0.5, "1"),
]
SPARK_NEW_UNIT = [("new", "b", "99999999999999999999999", float("inf"), "3")] * 4 + [  # identical extreme rows
    ("new", "zzz", "-1e999", float("-inf"), "x"), ("new", "a", str(-(2**62)), -5e299, "1")]
SPARK_DDL = f"{UID} string, cat string, big string, wide double, rank string"


def _rows(frame) -> Counter:
    """A bounded table's rows as a multiset (repr: NaN equals NaN)."""
    return Counter(repr(tuple(r)) for r in frame)


@pytest.mark.spark
def test_spark_bounding_is_stable_and_within_k_sensitivities(spark):
    """Spark's ``bound_contributions`` on an adversarial table and on it + one unit of 6 > K rows
    (4 identical extreme rows, 2 more extremes), D′ laid out differently (the new unit's rows first,
    other partitions): D's kept rows unchanged, K of the new unit's kept, answers within K × Δ; and
    the pandas bounding of the same tables satisfies the same (it need not keep the same rows)."""
    k = 2
    unit = PrivacyUnit(UID, k)
    queries = queries_for(ADVERSARIAL_SCHEMA, 5)
    table = spark.createDataFrame(SPARK_ROWS, SPARK_DDL).repartition(2)
    table_prime = spark.createDataFrame(SPARK_NEW_UNIT + SPARK_ROWS[::-1], SPARK_DDL).repartition(3)
    measured = [c.name for c in ADVERSARIAL_SCHEMA]
    for salt in (1, 2**62 + 12345, 987654321):
        bounded, bounded_prime = bound_contributions(table, unit, salt), bound_contributions(table_prime, unit, salt)
        kept, kept_prime = bounded.collect(), bounded_prime.collect()
        assert max(Counter(r[UID] for r in kept).values()) == k
        assert _rows(r for r in kept_prime if r[UID] != "new") == _rows(kept), salt  # D's units keep the same rows
        assert sum(r[UID] == "new" for r in kept_prime) == k
        before = answer_queries(bounded.select(*measured), ADVERSARIAL_SCHEMA, queries, CLIP)
        after = answer_queries(bounded_prime.select(*measured), ADVERSARIAL_SCHEMA, queries, CLIP)
        within_k_sensitivities(queries, before, after, k)
        alone = answer_frame(pd.DataFrame([r for r in kept_prime if r[UID] == "new"], columns=bounded_prime.columns, dtype=object),
                             ADVERSARIAL_SCHEMA, queries, CLIP)
        assert all(np.array_equal(b, a + z) for a, b, z in zip(before, after, alone))
        # the pandas bounding of the same tables: the same bound and stability
        frame = pd.DataFrame(SPARK_ROWS, columns=table.columns, dtype=object)
        frame_prime = pd.concat([frame, pd.DataFrame(SPARK_NEW_UNIT, columns=table.columns, dtype=object)], ignore_index=True)
        local, local_prime = bound_contributions_frame(frame, unit, salt), bound_contributions_frame(frame_prime, unit, salt)
        check_stable(local, local_prime, len(frame), len(SPARK_NEW_UNIT), k)
        within_k_sensitivities(queries, answer_frame(local, ADVERSARIAL_SCHEMA, queries, CLIP),
                               answer_frame(local_prime, ADVERSARIAL_SCHEMA, queries, CLIP), k)


@pytest.mark.spark
def test_spark_bounding_does_not_depend_on_row_order(spark):
    unit = PrivacyUnit(UID, 1)
    rows = [("u", None, "a"), ("u", "a", None)]
    kept = []
    for order in (rows, rows[::-1]):
        table = spark.createDataFrame(order, f"{UID} string, x string, y string").coalesce(1)
        kept.append({salt: _rows(bound_contributions(table, unit, salt).collect()) for salt in range(8)})
    assert kept[0] == kept[1]


def test_pandas_bounding_of_a_unit_ignores_other_units():
    unit = PrivacyUnit(UID, 1)
    table = pd.DataFrame({UID: ["u", "v", "v"], "x": [True, 1, 2], "y": [-0.0, 0.0, 0.0]}, dtype=object)
    without_u = table.iloc[1:]
    for salt in range(16):
        kept = bound_contributions_frame(table, unit, salt)
        assert list(kept[kept[UID] == "v"].index) == list(bound_contributions_frame(without_u, unit, salt).index), salt


def test_pandas_bounding_hashes_huge_integers():
    table = pd.DataFrame({UID: ["u", "u", "v"], "x": [10**400, 1, 2]}, dtype=object)
    assert len(bound_contributions_frame(table, PrivacyUnit(UID, 1), 3)) == 2


# ---- 2. coupled-noise diff of the CLI path under a unit ---------------------------------------------
COUPLED_K = 2
RELATION = f"add/remove one unit of `{UID}`, at most {COUPLED_K} rows each"
_units = np.random.default_rng(49).integers(0, 700, len(coupled.D_LARGE))
#: D: the row-level audit's 2,000-row table (its 24-row one is too small for K × the noise: a column's DP
#: estimate can come out all null, and the run is refused), in ~700 units of 0-10 rows (bounding bites
#: on both sides) and the null unit ('' in CSV) of 21 rows.
UNIT_D = [{**row, UID: "" if i % 97 == 0 else f"p{u}"} for i, (row, u) in enumerate(zip(coupled.D_LARGE, _units))]
#: The added unit: 6 > K rows — its worst-case row 3 times (identical), and 3 other extremes.
NEW_UNIT = [{**coupled.WORST_ROW, UID: "intruder"}] * 3 + [
    {"age": "-1e999", "hours": "1e308", "sex": "", "edu": "3", UID: "intruder"},
    {"age": "90", "hours": "nan", "sex": "Male", "edu": "9", UID: "intruder"},
    {"age": "abc", "hours": "100", "sex": "Female", "edu": "1", UID: "intruder"}]
UNIT_CASES = {"independent": ("independent", []), "fpt": ("fpt", coupled.FPT_SMALL)}


def _write_unit_inputs(work: Path, rows: list[dict]) -> tuple[str, str]:
    """:func:`coupled._write_inputs` with the unit column (not in the schema: the fit drops it after bounding)."""
    data, schema = work / "input.csv", work / "schema.json"
    with data.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=[UID, *(c["name"] for c in coupled.SCHEMA["columns"])])
        writer.writeheader()
        writer.writerows(rows)
    schema.write_text(json.dumps(coupled.SCHEMA), encoding="utf-8")
    return str(data), str(schema)


@pytest.mark.spark
@pytest.mark.parametrize("case", list(UNIT_CASES))
def test_coupled_noise_diff_under_a_unit(case, tmp_path, spark, capfd, monkeypatch, empty_store):  # noqa: F811
    """``spark-synth run --privacy-unit uid --max-rows-per-unit 2`` on D and on D′ = D + one unit of 6
    rows, every noise draw coupled (:class:`coupled.CoupledNoise`): every output is the same. Not
    vacuous: every exact answer differs, by exactly K rows (bounding hid the other 4), and the
    relation is stated in the JSON line, the privacy report, the run's and the ledger's tags."""
    engine, options = UNIT_CASES[case]
    real_main = coupled.main

    def main_with_unit(argv):
        flags = ["--privacy-unit", UID, "--max-rows-per-unit", str(COUPLED_K)] if argv[0] in ("run", "fit") else []
        return real_main([*argv, *flags])

    monkeypatch.setattr(coupled, "main", main_with_unit)
    monkeypatch.setattr(coupled, "_write_inputs", _write_unit_inputs)
    coupling = coupled.CoupledNoise(monkeypatch)
    side = dict(spark=spark, capfd=capfd, monkeypatch=monkeypatch, empty_store=empty_store, engine=engine,
                options=options, commands=("run",))
    side_d = coupled.run_side(UNIT_D, "D", tmp_path, **side)
    call = side_d["cli"]["run"]
    assert call["exit_code"] == 0 and call["stdout_lines"] == 1, call
    coupling.replay()
    side_d_prime = coupled.run_side(UNIT_D + NEW_UNIT, "D-prime", tmp_path, **side)
    coupling.check_complete()
    # not vacuous: the exact answers differ, by K rows in every count (each kept row lands in one cell)
    assert coupling.exact_answers_differ(), "D and D′ gave the same exact answers: the test would prove nothing"
    pairs = [(a, b) for (kind, a), (_, b) in zip(coupling.exact["record"], coupling.exact["replay"]) if kind == "gaussian"]
    assert pairs and all(int(b.sum()) - int(a.sum()) == COUPLED_K for a, b in pairs), \
        [int(b.sum()) - int(a.sum()) for a, b in pairs]  # 6 rows added, K = 2 kept
    # the relation, stated everywhere a guarantee is
    stdout = call["stdout"]
    assert (stdout["neighbouring_relation"], stdout["privacy_unit"], stdout["max_rows_per_unit"]) == (RELATION, UID, COUPLED_K)
    assert stdout["ledger"]["privacy_unit"] == UID, stdout["ledger"]
    (run,) = side_d["mlflow"]["experiments"]["spark-synth"]["runs"]
    report = run["artifacts"]["privacy_report.json"]
    assert report["neighbouring_relation"] == RELATION and report["privacy_unit"] == {"column": UID, "max_rows_per_unit": COUPLED_K}
    measurements = [r for r in report["releases"] if r["kind"] == "measurement"]
    assert measurements and all(r["l2_sensitivity"] == COUPLED_K for r in measurements), measurements  # counts: K × 1
    assert (run["tags"]["spark_synth.privacy_unit"], run["tags"]["spark_synth.max_rows_per_unit"]) == (UID, str(COUPLED_K))
    (ledger,) = [e for name, e in side_d["mlflow"]["experiments"].items() if name.startswith("spark-synth-budget:")]
    assert [r["tags"]["spark_synth.privacy_unit"] for r in ledger["runs"]] == [UID]
    differences = coupled.diff(side_d, side_d_prime)
    assert differences == [], "outputs differ under coupled noise (a path bypassing the noise):\n" + "\n".join(differences)


# ---- 3. the noise scale under a unit --------------------------------------------------------------
@pytest.mark.statistical
def test_noise_scale_is_k_times_the_row_level_one():
    """200,000 draws of a marginal's noise under a unit of K = 4 rows at ρ = 0.5: σ = K/√(2ρ) = 4 is
    stated (release and report, with ℓ2 sensitivity K) and is the noise's standard deviation (sample
    variance within 3% of σ², ≈ 11 of its standard errors; σ = 1, the row-level scale, is 16 times
    off). Selections and raw counts are scaled the same way."""
    k, rho, draws = 4, 0.5, 200_000
    unit_filter = PrivacyFilter(PrivacyBudget(1000.0, 1e-6), unit=PrivacyUnit(UID, k))
    row_filter = PrivacyFilter(PrivacyBudget(1000.0, 1e-6))
    query = MarginalQuery(("c",))
    exact = np.tile(np.array([5, 7], dtype=np.int64), draws // 2)
    released = release_query(unit_filter, query, exact, rho)
    assert released.sigma == pytest.approx(k / math.sqrt(2 * rho), rel=1e-6)
    noise = released.values - exact
    assert np.all(noise == np.round(noise))  # the discrete Gaussian
    assert abs(noise.var() / released.sigma**2 - 1) < 0.03, noise.var()
    assert abs(noise.mean()) < 6 * released.sigma / math.sqrt(draws)
    (entry,) = unit_filter.report().measurements
    assert (entry.l2_sensitivity, entry.sigma) == (k, released.sigma)
    assert unit_filter.report().neighbouring_relation == f"add/remove one unit of `{UID}`, at most {k} rows each"
    # the same release at row level: σ K times smaller; its noise is not what the unit filter adds
    row_sigma = release_query(row_filter, query, exact[:2], rho).sigma
    assert released.sigma == pytest.approx(k * row_sigma, rel=1e-6)
    # a moment query: its integer sensitivity K × Δ (rounded up by under one integer unit)
    moments = MomentQuery(name="m", directions=np.array([[1.0]]), degree=3)
    moment_release = release_query(unit_filter, moments, np.zeros(3, dtype=np.int64), rho)
    moment_entry = unit_filter.report().measurements[-1]
    assert k * moments.l2_sensitivity <= moment_entry.l2_sensitivity <= k * moments.l2_sensitivity + 1 / moments.unit
    assert moment_release.sigma == pytest.approx(moment_entry.l2_sensitivity / math.sqrt(2 * rho), rel=1e-6)
    # raw counts and the exponential mechanism
    release_counts(unit_filter, np.array([3, 4]), rho, name="counts", description="counts")
    select_index(unit_filter, np.array([1.0, 2.0]), 1.5, rho, name="select", description="select")
    select_index(row_filter, np.array([1.0, 2.0]), 1.5, rho, name="select", description="select")
    counts_entry = unit_filter.report().measurements[-1]
    (selection,), (row_selection,) = unit_filter.report().selections, row_filter.report().selections
    assert counts_entry.l2_sensitivity == k and counts_entry.sigma == pytest.approx(k / math.sqrt(2 * rho), rel=1e-6)
    assert selection.score_sensitivity == k * 1.5 and selection.scale == pytest.approx(k * row_selection.scale, rel=1e-6)


# ---- 4. an empirical ε lower bound for a unit of K identical rows -----------------------------------
DIST_K = 3
#: The distinguishing test's D, in units (the null unit included); D′ adds one unit of K identical worst-case rows.
DIST_D = distinguishing.D.assign(**{UID: ["a", "b", "b", None, "a"]})
DIST_UNIT = pd.concat([distinguishing.WORST] * DIST_K, ignore_index=True).assign(**{UID: "new"})


def _unit_statistics(unit: PrivacyUnit, releases: int = distinguishing.RELEASES):
    """(statistic on D's releases, on D′'s, ε claimed, sd of the statistic) — the distinguishing
    test's Neyman–Pearson statistic, on D and D′ bounded to K rows per unit (one salt), the noise
    calibrated under ``unit``."""
    queries = (distinguishing.HISTOGRAM, distinguishing.MOMENTS)
    salt = 2024
    bound = PrivacyUnit(UID, DIST_K)
    table, table_prime = DIST_D, pd.concat([DIST_D, DIST_UNIT], ignore_index=True)
    bounded, bounded_prime = bound_contributions_frame(table, bound, salt), bound_contributions_frame(table_prime, bound, salt)
    exact_d = answer_frame(bounded, distinguishing.SCHEMA, queries)
    exact_d_prime = answer_frame(bounded_prime, distinguishing.SCHEMA, queries)
    for q, a, b in zip(queries, exact_d, exact_d_prime):  # the unit moves every answer by K × the worst row's move
        assert 0.9999 * DIST_K * q.l2_sensitivity <= l2_change(q, a, b) <= DIST_K * q.l2_sensitivity
    privacy_filter = PrivacyFilter(PrivacyBudget(1000.0, distinguishing.DELTA), unit=unit)
    rhos = split_rho(rho_from_epsilon(distinguishing.EPSILON, distinguishing.DELTA), [1.0, 1.0])
    released = {label: [release_query(privacy_filter, q, np.tile(a.ravel(), (releases, 1)), rho)
                        for q, a, rho in zip(queries, exact, rhos)]
                for label, exact in (("D", exact_d), ("D'", exact_d_prime))}
    claimed = epsilon_from_rho(math.fsum(m.rho for m in released["D"]), distinguishing.DELTA)
    shifts = [(b - a).ravel() / q.unit for q, a, b in zip(queries, exact_d, exact_d_prime)]
    base = [a.ravel() / q.unit for q, a in zip(queries, exact_d)]
    sigmas = [m.sigma for m in released["D"]]
    scale = math.sqrt(sum(float(d @ d) / s**2 for d, s in zip(shifts, sigmas)))

    def statistic(measurements):
        return sum((m.values - b) @ d / s**2 for m, b, d, s in zip(measurements, base, shifts, sigmas)) / scale

    return statistic(released["D"]), statistic(released["D'"]), claimed, scale


@pytest.mark.statistical
def test_empirical_epsilon_of_a_unit_stays_below_the_claim():
    """10⁵ releases of a histogram and a moment vector on D and on D′ = D + one unit of K = 3
    identical worst-case rows, noise calibrated for the unit: the empirical lower bound on ε (the
    distinguishing test's, Clopper–Pearson, Bonferroni; holds with probability ≥ 1 − 10⁻⁵) does not
    exceed the stated ε."""
    stat_d, stat_d_prime, claimed, scale = _unit_statistics(PrivacyUnit(UID, DIST_K))
    rho = rho_from_epsilon(distinguishing.EPSILON, distinguishing.DELTA)
    assert claimed <= distinguishing.EPSILON and scale == pytest.approx(math.sqrt(2 * rho), rel=1e-3)
    assert abs(stat_d.mean()) < 0.05 and abs(stat_d_prime.mean() - scale) < 0.05
    assert distinguishing._lower_bound_epsilon(stat_d, stat_d_prime) <= claimed


@pytest.mark.statistical
def test_noise_calibrated_for_one_row_is_caught():
    """Power: the same bounded tables, the noise calibrated for one row (a row-level filter: σ K times
    too small for the unit) — the lower bound on ε exceeds the stated ε (≈ 5.5 against 4 with the
    25,000 releases used here, to keep the runtime: a wide margin at K = 3)."""
    stat_d, stat_d_prime, claimed, scale = _unit_statistics(PrivacyUnit(), releases=25_000)
    rho = rho_from_epsilon(distinguishing.EPSILON, distinguishing.DELTA)
    assert scale == pytest.approx(DIST_K * math.sqrt(2 * rho), rel=1e-3)  # the unit moves the answers K σ's of one row
    assert distinguishing._lower_bound_epsilon(stat_d, stat_d_prime) > claimed
