"""boolean, date, timestamp and timestamp_ntz columns: schema parsing, public sizes, encode/decode,
and their DP pre-pass bounds (no Spark)."""

import datetime as dt
import math

import numpy as np
import pandas as pd
import pytest
import yaml

from spark_synth.errors import ParameterError, SchemaError
from spark_synth.measure.profile import profile_frame
from spark_synth.prepass import DATE_GRID, TIME_GRID, TIME_STEP, plan_prepass, profile_requests, run_prepass
from spark_synth.schema import ColumnType, OutOfDomainPolicy, load_schema, schema_from_dict
from spark_synth.schema.draft import DeclaredColumn, draft_column, pick_columns
from spark_synth.schema.encoding import decode_codes, encode_frame

UTC = dt.timezone.utc
GOOD = """\
columns:
  - {name: flag, type: boolean}
  - {name: day, type: date, min: 2020-01-01, max: '2020-01-31'}
  - {name: at, type: timestamp, min: '2020-01-01T00:00:00Z', max: 2020-01-02T00:00:00+00:00, bins: 24, nullable: false}
"""


def _write(tmp_path, text: str):
    path = tmp_path / "s.yaml"
    path.write_text(text)
    return path


def test_good_file_parses_to_model_twins_and_round_trips(tmp_path):
    schema = load_schema(_write(tmp_path, GOOD))
    flag, day, at = schema
    assert flag.type is ColumnType.BOOLEAN and flag.type.model_type is ColumnType.CATEGORICAL
    assert flag.type.is_discrete and flag.categories == (False, True) and (flag.n_values, flag.size) == (2, 3)
    assert day.type.model_type is ColumnType.INTEGER and not day.type.is_discrete
    assert (day.min, day.max) == (18262, 18292)  # days since 1970-01-01
    assert (day.n_values, day.size) == (31, 32)  # one bin per day, like a narrow integer column
    assert at.type.model_type is ColumnType.CONTINUOUS and (at.min, at.max) == (1577836800.0, 1577923200.0)
    assert (at.n_values, at.size) == (24, 24)
    assert schema.to_dict()["columns"] == [
        {"name": "flag", "type": "boolean", "nullable": True},
        {"name": "day", "type": "date", "min": "2020-01-01", "max": "2020-01-31", "nullable": True},
        {"name": "at", "type": "timestamp", "min": "2020-01-01T00:00:00Z", "max": "2020-01-02T00:00:00Z",
         "bins": 24, "nullable": False}]
    again = _write(tmp_path, yaml.safe_dump(schema.to_dict()))
    assert load_schema(again) == schema
    offset = schema_from_dict({"columns": [{"name": "at", "type": "timestamp", "min": "2020-01-01T01:00:00+01:00",
                                            "max": "2020-01-01 12:00"}]})
    assert (offset["at"].min, offset["at"].max) == (1577836800.0, 1577836800.0 + 12 * 3600)  # naive = UTC


@pytest.mark.parametrize("column, words", [
    ({"name": "day", "type": "date", "max": "2020-01-31"}, ["column 'day'", "'min'", "YYYY-MM-DD"]),
    ({"name": "day", "type": "date", "min": "2020-02-30", "max": "2020-03-01"}, ["column 'day'", "2020-02-30"]),
    ({"name": "day", "type": "date", "min": "2020-01-01T10:00:00", "max": "2020-03-01"}, ["column 'day'", "YYYY-MM-DD"]),
    ({"name": "day", "type": "date", "min": "2020-03-01", "max": "2020-01-01"},
     ["column 'day'", "'min' (2020-03-01) must be below 'max' (2020-01-01)"]),
    ({"name": "day", "type": "date", "min": 0, "max": "2020-01-01"}, ["column 'day'", "not as a number"]),
    ({"name": "at", "type": "timestamp", "min": "yesterday", "max": "2020-01-01T00:00:00Z"},
     ["column 'at'", "ISO 8601", "yesterday"]),
    ({"name": "at", "type": "timestamp", "min": "2020-01-02T00:00:00Z", "max": "2020-01-01T00:00:00Z"},
     ["column 'at'", "must be below"]),
    ({"name": "at", "type": "timestamp", "min": "TODO", "max": "2020-01-01T00:00:00Z"}, ["column 'at'", "'min: TODO'"]),
    ({"name": "flag", "type": "boolean", "categories": ["y", "n"]}, ["column 'flag'", "boolean", "categories"]),
    ({"name": "flag", "type": "boolean", "min": 0, "max": 1}, ["column 'flag'", "remove ['max', 'min']"]),
])
def test_bad_files_give_one_line_naming_the_column(tmp_path, column, words):
    with pytest.raises(SchemaError) as info:
        load_schema(_write(tmp_path, yaml.safe_dump({"columns": [column]})))
    message = str(info.value)
    assert "\n" not in message and all(w in message for w in words), message


def _frame():
    return pd.DataFrame({
        "flag": [True, False, None, 1],
        "day": [dt.date(2020, 1, 1), dt.date(2019, 6, 1), None, dt.date(2020, 3, 1)],
        "at": [pd.Timestamp("2020-01-01 12:30"), None, dt.datetime(2019, 1, 1, tzinfo=UTC), dt.datetime(2021, 1, 1)]})


def test_encode_clips_like_numbers_and_error_refuses_the_columns(tmp_path):
    schema = load_schema(_write(tmp_path, GOOD))
    codes, rejected = encode_frame(_frame(), schema, OutOfDomainPolicy.CLIP)
    assert not rejected.any()
    # boolean: False/True are codes 0/1; None and a non-boolean (1) are null (code 2)
    assert codes[:, 0].tolist() == [1, 0, 2, 2]
    # date: in range → its day; below min → first day; null → null code; above max → last day
    assert codes[:, 1].tolist() == [0, 0, 31, 30]
    # timestamp (non-nullable): 12:30 → hour bin 12; null → substitute (first bin); clamped to first/last bin
    assert codes[:, 2].tolist() == [12, 0, 0, 23]
    _, rejected = encode_frame(_frame(), schema, OutOfDomainPolicy.ERROR)
    assert rejected.tolist() == [True, True, True]
    _, rejected = encode_frame(_frame().iloc[:1], schema, OutOfDomainPolicy.ERROR)
    assert rejected.tolist() == [False, False, False]


def test_decode_gives_typed_values_within_the_bounds(tmp_path):
    schema = load_schema(_write(tmp_path, GOOD))
    codes = np.array([[0, 0, 0], [1, 30, 23], [2, 31, 5]])
    out = decode_codes(codes, schema, np.random.default_rng(0))
    assert out["flag"].tolist() == [False, True, None]
    assert out["day"].tolist() == [dt.date(2020, 1, 1), dt.date(2020, 1, 31), None]
    at = out["at"]
    assert str(at.dtype).endswith("UTC]") and at.notna().all()
    assert pd.Timestamp("2020-01-01", tz="UTC") <= at[0] < pd.Timestamp("2020-01-01 01:00", tz="UTC")
    assert pd.Timestamp("2020-01-01 23:00", tz="UTC") <= at[1] <= pd.Timestamp("2020-01-02", tz="UTC")
    assert pd.Timestamp("2020-01-01 05:00", tz="UTC") <= at[2] < pd.Timestamp("2020-01-01 06:00", tz="UTC")


def test_draft_and_prepass_of_declared_boolean_date_timestamp():
    declared = [DeclaredColumn("flag", "boolean"), DeclaredColumn("day", "date", nullable=False),
                DeclaredColumn("at", "timestamp"), DeclaredColumn("wall", "timestamp_ntz"), DeclaredColumn("n", "bigint")]
    assert [draft_column(c) for c in pick_columns(declared, None, None)] == [
        {"name": "flag", "type": "boolean"},
        {"name": "day", "type": "date", "min": "TODO", "max": "TODO", "nullable": False},
        {"name": "at", "type": "timestamp", "min": "TODO", "max": "TODO"},
        {"name": "wall", "type": "timestamp_ntz", "min": "TODO", "max": "TODO"},
        {"name": "n", "type": "integer", "min": "TODO", "max": "TODO"}]
    with pytest.raises(SchemaError, match=r"xs \(array<int>\).*--exclude"):
        pick_columns([DeclaredColumn("xs", "array<int>")], None, None)
    plan = plan_prepass(declared, 1.0, 1e-9)  # the DP pre-pass skips only the boolean, spending nothing on it
    assert plan.skipped == ("flag",) and [p.column.name for p in plan.columns] == ["day", "at", "wall", "n"]
    assert plan.delta_approx == 0 and plan.budget.delta == 1e-9  # no text column: all of δ converts ρ
    with pytest.raises(ParameterError, match="--dp-bounds"):
        plan_prepass(declared[:1], 1.0, 1e-9)


NTZ = """\
columns:
  - {name: wall, type: timestamp_ntz, min: '2020-03-08T00:00:00', max: 2020-03-08 06:00:00, bins: 6}
  - {name: at, type: timestamp, min: '2020-03-08T00:00:00Z', max: '2020-03-08T06:00:00Z', bins: 6}
"""


def test_timestamp_ntz_parses_as_wall_clock_seconds_and_round_trips(tmp_path):
    schema = load_schema(_write(tmp_path, NTZ))
    wall, at = schema
    assert wall.type is ColumnType.TIMESTAMP_NTZ and wall.type.model_type is ColumnType.CONTINUOUS
    assert wall.type.is_temporal and not wall.type.is_discrete
    assert (wall.min, wall.max) == (at.min, at.max) == (1583625600.0, 1583625600.0 + 6 * 3600)
    assert schema.to_dict()["columns"][0] == {"name": "wall", "type": "timestamp_ntz", "min": "2020-03-08T00:00:00",
                                              "max": "2020-03-08T06:00:00", "bins": 6, "nullable": True}
    assert load_schema(_write(tmp_path, yaml.safe_dump(schema.to_dict()))) == schema
    as_date = schema_from_dict({"columns": [{"name": "w", "type": "timestamp_ntz", "min": dt.date(2020, 1, 1),
                                             "max": "2020-01-01T00:00:00.250000"}]})
    assert (as_date["w"].min, as_date["w"].max) == (1577836800.0, 1577836800.25)
    assert as_date.to_dict()["columns"][0]["max"] == "2020-01-01T00:00:00.250000"


@pytest.mark.parametrize("bound, zoned", [("2020-01-01T00:00:00Z", True), ("2020-01-01T01:00:00+01:00", True),
                                          ("noon", False), (1577836800, False)])
def test_timestamp_ntz_bounds_with_a_zone_or_not_a_time_are_one_line_naming_the_column(tmp_path, bound, zoned):
    text = yaml.safe_dump({"columns": [{"name": "wall", "type": "timestamp_ntz", "min": bound,
                                        "max": "2021-01-01T00:00:00"}]})
    with pytest.raises(SchemaError) as info:
        load_schema(_write(tmp_path, text))
    message = str(info.value)
    assert "\n" not in message and "column 'wall'" in message and "timestamp_ntz" in message, message
    assert ("without 'Z' or an offset" in message and "declare the column timestamp" in message) is zoned


def test_timestamp_ntz_bounds_that_yaml_reads_as_aware_datetimes_are_refused(tmp_path):
    for unquoted in ("2020-01-01T00:00:00Z", "2020-01-01 01:00:00+01:00"):  # YAML reads these as aware datetimes
        with pytest.raises(SchemaError, match="without 'Z' or an offset"):
            load_schema(_write(tmp_path, f"columns: [{{name: wall, type: timestamp_ntz, min: {unquoted}, "
                                         f"max: '2021-01-01T00:00:00'}}]"))


def test_timestamp_ntz_encodes_by_the_wall_clock_and_decodes_naive_within_the_bounds(tmp_path):
    schema = load_schema(_write(tmp_path, NTZ))
    plus_five = dt.timezone(dt.timedelta(hours=5))
    frame = pd.DataFrame({
        # 02:30 wall clock → bin 2; an aware value by its own wall clock (05:10 → bin 5, not 00:10 UTC);
        # a date → midnight; null → null code 6; earlier → first bin
        "wall": pd.Series([dt.datetime(2020, 3, 8, 2, 30), dt.datetime(2020, 3, 8, 5, 10, tzinfo=plus_five),
                           dt.date(2020, 3, 8), None, dt.datetime(2020, 3, 7, 23, 0)], dtype=object),
        "at": pd.Series([dt.datetime(2020, 3, 8, 2, 30, tzinfo=UTC), dt.datetime(2020, 3, 8, 5, 10, tzinfo=plus_five),
                         dt.date(2020, 3, 8), None, dt.datetime(2020, 3, 7, 23, 0)], dtype=object)})
    codes, _ = encode_frame(frame, schema, OutOfDomainPolicy.CLIP)
    assert codes[:, 0].tolist() == [2, 5, 0, 6, 0]
    assert codes[:, 1].tolist() == [2, 0, 0, 6, 0]  # a timestamp is an instant: 05:10+05:00 is 00:10 UTC
    out = decode_codes(np.array([[0, 0], [2, 2], [5, 5], [6, 6]]), schema, np.random.default_rng(0))
    wall = out["wall"]
    assert str(wall.dtype) == "datetime64[us]" and str(out["at"].dtype).endswith("UTC]")  # naive vs UTC instants
    assert wall.isna().tolist() == [False, False, False, True]
    for value, hour in zip(wall[:3], (0, 2, 5)):
        assert pd.Timestamp(2020, 3, 8, hour) <= value < pd.Timestamp(2020, 3, 8, hour + 1)


def _quantile_band(values: np.ndarray, q: float, slack: float) -> tuple[float, float]:
    return float(np.quantile(values, q - slack)), float(np.quantile(values, q + slack))


def test_prepass_bounds_of_dates_and_timestamps_sit_at_the_quantiles_with_exact_accounting():
    rng = np.random.default_rng(7)
    n = 40_000
    days = rng.integers(0, 3653, n)  # 2010-01-01 .. 2019-12-31
    seconds = rng.uniform(0, 10 * 365.25 * 86400, n)  # ten years of instants from 2012-01-01
    frame = pd.DataFrame({
        "day": [dt.date(2010, 1, 1) + dt.timedelta(days=int(d)) for d in days],
        "at": [dt.datetime(2012, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=float(s)) for s in seconds],
        "n": rng.integers(0, 1000, n)})
    declared = [DeclaredColumn("day", "date"), DeclaredColumn("at", "timestamp", nullable=False),
                DeclaredColumn("n", "bigint")]
    plan = plan_prepass(declared, 4.0, 1e-9)
    result = run_prepass(lambda requests, grid: profile_frame(frame, requests, grid), plan)
    day, at = result.columns["day"], result.columns["at"]
    assert day["type"] == "date" and at["type"] == "timestamp" and at["nullable"] is False
    assert all(isinstance(day[k], str) and isinstance(at[k], str) for k in ("min", "max"))
    assert at["min"].endswith(":00:00Z") and at["max"].endswith(":00:00Z")  # whole hours of the public grid
    schema = schema_from_dict({"columns": [day, at]})  # what the drafted file reads back as
    truth = {"day": days + (dt.date(2010, 1, 1) - dt.date(1970, 1, 1)).days,
             "at": seconds + (dt.datetime(2012, 1, 1, tzinfo=UTC) - dt.datetime(1970, 1, 1, tzinfo=UTC)).total_seconds()}
    for name, step, grid in (("day", 1, DATE_GRID), ("at", TIME_STEP, TIME_GRID)):
        low, high = schema[name].min, schema[name].max
        assert low in grid and high in grid
        # the lower bound is the lower edge of an interval holding a quantile near 1%, the upper one
        # the upper edge of one near 99% (0.5% of the rows is far more than the mechanism's error here)
        lo_band, hi_band = _quantile_band(truth[name], 0.01, 0.005), _quantile_band(truth[name], 0.99, 0.005)
        assert lo_band[0] - step <= low <= lo_band[1] and hi_band[0] <= high <= hi_band[1] + step, (name, low, high)
    # accounting: ρ split equally over the three columns, two selections each at half the column's ρ
    report = result.report
    by_column = {}
    for entry in report.entries:
        by_column.setdefault(entry.name.split(":")[0], []).append(entry)
    assert sorted(by_column) == ["at", "day", "n"]
    for name, grid in (("day", DATE_GRID), ("at", TIME_GRID)):
        lower, upper = by_column[name]
        assert (lower.kind, upper.kind) == ("selection", "selection")
        assert lower.candidates == upper.candidates == grid.size - 1  # intervals between public candidates
        planned = next(p.rho for p in plan.columns if p.column.name == name)
        assert lower.rho <= planned / 2 and lower.rho == pytest.approx(planned / 2, rel=1e-12)
    assert result.cost.rho == report.rho_spent == math.fsum(e.rho for e in report.entries)
    assert report.rho_spent <= plan.budget.rho and report.rho_spent == pytest.approx(plan.budget.rho, rel=1e-9)
    assert result.cost.delta_approx == 0 and result.cost.epsilon <= 4.0


def test_prepass_reads_timestamp_ntz_on_the_wall_clock():
    """The same wall-clock values, naive and as aware values of another zone, count alike (by the wall
    clock); the drafted bounds are wall-clock text without a zone."""
    rng = np.random.default_rng(11)
    hours = rng.integers(0, 24 * 365, 20_000)  # 2021, hour by hour
    wall = [dt.datetime(2021, 1, 1) + dt.timedelta(hours=int(h), minutes=30) for h in hours]
    tokyo = dt.timezone(dt.timedelta(hours=9))
    frame = pd.DataFrame({"wall": wall, "aware": pd.Series([w.replace(tzinfo=tokyo) for w in wall], dtype=object)})
    plan = plan_prepass([DeclaredColumn("wall", "timestamp_ntz"), DeclaredColumn("aware", "timestamp_ntz")], 8.0, 1e-9)
    naive, aware = profile_frame(frame, profile_requests(plan), None)  # every request brings its own grid
    assert naive.grid.size == TIME_GRID.size + 1 and naive.grid.sum() == 20_000
    assert naive.grid.tolist() == aware.grid.tolist() and naive.ties.tolist() == aware.ties.tolist()
    first = np.flatnonzero(TIME_GRID == (dt.datetime(2021, 1, 1, 1) - dt.datetime(1970, 1, 1)).total_seconds())[0]
    assert naive.grid[first] == np.sum(hours == 0)  # 00:30 lies in the cell (00:00, 01:00]
    plan = plan_prepass([DeclaredColumn("wall", "timestamp_ntz")], 8.0, 1e-9)
    entry = run_prepass(lambda requests, grid: profile_frame(frame, requests, grid), plan).columns["wall"]
    assert entry["type"] == "timestamp_ntz" and entry["min"].endswith(":00:00") and "+" not in entry["min"]
    low, high = dt.datetime.fromisoformat(entry["min"]), dt.datetime.fromisoformat(entry["max"])
    assert dt.datetime(2021, 1, 1) <= low <= dt.datetime(2021, 1, 10)
    assert dt.datetime(2021, 12, 22) <= high <= dt.datetime(2022, 1, 1)


def test_evaluation_encoder_reads_dates_and_timestamps_on_their_public_scale(tmp_path):
    from spark_synth.evaluate.encoding import PublicEncoder

    schema = load_schema(_write(tmp_path, GOOD))
    frame = pd.DataFrame({"flag": [True], "day": [dt.date(2020, 1, 16)], "at": [pd.Timestamp("2020-01-01 12:00")]})
    x = PublicEncoder(schema, ["day", "at"]).transform(frame)
    assert x.tolist() == [[0.5, 0.0, 0.5]]  # day: value, null flag; at (non-nullable): value


def test_model_signature_types(tmp_path):
    from spark_synth.track.pyfunc import column_type

    assert [column_type(c) for c in load_schema(_write(tmp_path, GOOD))] == ["boolean", "datetime", "datetime"]
    assert [column_type(c) for c in load_schema(_write(tmp_path, NTZ))] == ["datetime", "datetime"]
