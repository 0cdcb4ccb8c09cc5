"""boolean, date, timestamp and timestamp_ntz columns through the real Spark path: measure, fit,
sample, schema init."""

import contextlib
import datetime as dt
import json

import numpy as np
import pandas as pd
import pytest
import yaml

from spark_synth.cli import main
from spark_synth.errors import DataValidationError
from spark_synth.measure.profile import profile_columns, profile_frame
from spark_synth.measure.rows import sample_codes
from spark_synth.pipeline import Synthesizer
from spark_synth.prepass import GRID, TIME_STEP, plan_prepass, profile_requests
from spark_synth.privacy import rho_from_epsilon
from spark_synth.schema import OutOfDomainPolicy, load_schema, schema_from_dict
from spark_synth.schema.draft import DeclaredColumn

pytestmark = pytest.mark.spark

UTC = dt.timezone.utc
SCHEMA = schema_from_dict({"columns": [
    {"name": "flag", "type": "boolean"},
    {"name": "day", "type": "date", "min": "2020-01-01", "max": "2020-01-31"},
    {"name": "at", "type": "timestamp", "min": "2020-01-01T00:00:00Z", "max": "2020-01-02T00:00:00Z", "bins": 24},
]})
IN_DOMAIN = [(True, dt.date(2020, 1, 5), dt.datetime(2020, 1, 1, 12, 30, tzinfo=UTC)),
             (False, dt.date(2020, 1, 20), dt.datetime(2020, 1, 1, 3, 0, tzinfo=UTC)),
             (None, None, None)]
OUT_OF_DOMAIN = [(True, dt.date(2019, 6, 1), dt.datetime(2021, 1, 1, tzinfo=UTC))]


def _frame(spark, rows):
    return spark.createDataFrame(rows, "flag boolean, day date, at timestamp")


def test_measured_codes_are_clipped_and_do_not_depend_on_the_session_time_zone(spark):
    df = _frame(spark, IN_DOMAIN + OUT_OF_DOMAIN)
    zone = spark.conf.get("spark.sql.session.timeZone")
    try:
        by_zone = {}
        for name in ("UTC", "America/New_York"):
            spark.conf.set("spark.sql.session.timeZone", name)
            codes = sample_codes(df, SCHEMA, 10, seed=0)
            by_zone[name] = sorted(map(tuple, codes.tolist()))
    finally:
        spark.conf.set("spark.sql.session.timeZone", zone)
    # (flag, day - 2020-01-01, hour bin); nulls → null codes (2, 31, 24); out of domain → clamped to the bounds
    assert by_zone["UTC"] == sorted([(1, 4, 12), (0, 19, 3), (2, 31, 24), (1, 0, 23)])
    assert by_zone["America/New_York"] == by_zone["UTC"]
    with pytest.raises(DataValidationError) as info:
        sample_codes(df, SCHEMA, 10, seed=0, policy=OutOfDomainPolicy.ERROR)
    assert "['day', 'at']" in str(info.value) and "\n" not in str(info.value)


def test_independent_fit_and_sample_round_trip_types_and_bounds(spark):
    from pyspark.sql import types as T

    df = _frame(spark, IN_DOMAIN * 20 + OUT_OF_DOMAIN)
    synth = Synthesizer("independent", epsilon=2.0, delta=1e-9).fit(df, SCHEMA)
    out = synth.sample(300, seed=3, spark=spark)
    types = {f.name: type(f.dataType) for f in out.schema.fields}
    assert types == {"flag": T.BooleanType, "day": T.DateType, "at": T.TimestampType}
    rows = out.collect()
    assert len(rows) == 300
    flags = {r.flag for r in rows}
    assert flags <= {True, False, None} and {True, False} <= flags
    days = [r.day for r in rows if r.day is not None]
    assert days and all(dt.date(2020, 1, 1) <= d <= dt.date(2020, 1, 31) for d in days)
    stamps = [r.at for r in rows if r.at is not None]  # naive datetimes in the session time zone (UTC here)
    assert stamps and all(dt.datetime(2020, 1, 1) <= s <= dt.datetime(2020, 1, 2) for s in stamps)
    with pytest.raises(DataValidationError, match=r"columns \['day', 'at'\] hold values outside"):
        Synthesizer("independent", epsilon=1.0, delta=1e-9, out_of_domain="error").fit(df, SCHEMA)


def test_schema_init_drafts_declared_boolean_date_timestamp_of_parquet(spark, tmp_path, capsys):
    source = tmp_path / "t.parquet"
    walls = [dt.datetime(2020, 1, 1, 12, 30), None, dt.datetime(2020, 3, 8, 2, 30)]
    rows = [row + (wall,) for row, wall in zip(IN_DOMAIN, walls)]
    spark.createDataFrame(rows, "flag boolean, day date, at timestamp, wall timestamp_ntz").write.parquet(str(source))
    out = tmp_path / "t.yaml"
    code = main(["schema", "init", "--input", str(source), "--output", str(out), "--no-mlflow"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert json.loads(captured.out.strip())["todo"] == ["day", "at", "wall"]
    assert yaml.safe_load(out.read_text())["columns"] == [
        {"name": "flag", "type": "boolean"},
        {"name": "day", "type": "date", "min": "TODO", "max": "TODO"},
        {"name": "at", "type": "timestamp", "min": "TODO", "max": "TODO"},
        {"name": "wall", "type": "timestamp_ntz", "min": "TODO", "max": "TODO"}]


@contextlib.contextmanager
def _session_zone(spark, zone: str):
    before = spark.conf.get("spark.sql.session.timeZone")
    spark.conf.set("spark.sql.session.timeZone", zone)
    try:
        yield
    finally:
        spark.conf.set("spark.sql.session.timeZone", before)


#: timestamp_ntz: one bin per hour of 2020, wall clock
NTZ_SCHEMA = schema_from_dict({"columns": [
    {"name": "wall", "type": "timestamp_ntz", "min": "2020-01-01T00:00:00", "max": "2021-01-01T00:00:00", "bins": 366 * 24}]})
#: wall-clock times that New York skips (02:30 on 2020-03-08) or has twice (01:30 on 2020-11-01),
#: a fraction of a second, a null, one below the bounds and one on the lower bound
NTZ_ROWS = [(dt.datetime(2020, 3, 8, 2, 30),), (dt.datetime(2020, 11, 1, 1, 30),), (dt.datetime(2020, 6, 1, 12, 59, 59, 500000),),
            (None,), (dt.datetime(2019, 12, 31, 23, 0),), (dt.datetime(2020, 1, 1),)]


def _hour_of_2020(value: dt.datetime) -> int:
    return int((value - dt.datetime(2020, 1, 1)).total_seconds() // 3600)


def test_timestamp_ntz_codes_are_wall_clock_hours_whatever_the_session_time_zone(spark):
    by_zone = {}
    for zone in ("UTC", "America/New_York", "Asia/Kolkata"):
        with _session_zone(spark, zone):
            df = spark.createDataFrame(NTZ_ROWS, "wall timestamp_ntz")
            by_zone[zone] = sorted(int(c) for c in sample_codes(df, NTZ_SCHEMA, 10, seed=0)[:, 0])
    expected = sorted([_hour_of_2020(dt.datetime(2020, 3, 8, 2, 30)), _hour_of_2020(dt.datetime(2020, 11, 1, 1, 30)),
                       _hour_of_2020(dt.datetime(2020, 6, 1, 12)), 366 * 24, 0, 0])  # null code; clipped; first hour
    assert by_zone["UTC"] == expected
    assert by_zone["America/New_York"] == by_zone["Asia/Kolkata"] == by_zone["UTC"]


def test_timestamp_ntz_fit_and_sample_in_a_non_utc_session_keep_the_wall_clock_and_the_spark_type(spark, tmp_path):
    from pyspark.sql import types as T

    narrow = schema_from_dict({"columns": [
        {"name": "wall", "type": "timestamp_ntz", "min": "2020-03-08T00:00:00", "max": "2020-03-08T06:00:00", "bins": 6}]})
    # most rows in the hour New York skips: measured by its wall clock they stay in bin 2
    rows = [(dt.datetime(2020, 3, 8, 2, m),) for m in range(60)] * 20 + [(dt.datetime(2020, 3, 8, 4, 15),)] * 100
    with _session_zone(spark, "America/New_York"):
        df = spark.createDataFrame(rows, "wall timestamp_ntz")
        out = Synthesizer("independent", epsilon=2.0, delta=1e-9).fit(df, narrow).sample(400, seed=5, spark=spark)
        assert [(f.name, type(f.dataType)) for f in out.schema.fields] == [("wall", T.TimestampNTZType)]
        out.write.parquet(str(tmp_path / "o.parquet"))
        back = spark.read.parquet(str(tmp_path / "o.parquet"))
        assert back.schema == df.schema  # the synthetic table has the input's Spark schema
        values = [r.wall for r in back.collect() if r.wall is not None]
    assert len(values) > 350 and all(dt.datetime(2020, 3, 8) <= v <= dt.datetime(2020, 3, 8, 6) for v in values)
    assert sum(dt.datetime(2020, 3, 8, 2) <= v < dt.datetime(2020, 3, 8, 3) for v in values) > 0.7 * len(values)


def test_a_timestamp_declared_as_the_other_kind_is_one_line_naming_the_column_and_the_fix(spark):
    wall = spark.createDataFrame(NTZ_ROWS, "wall timestamp_ntz")
    declared_instant = schema_from_dict({"columns": [
        {"name": "wall", "type": "timestamp", "min": "2020-01-01T00:00:00Z", "max": "2021-01-01T00:00:00Z"}]})
    with pytest.raises(DataValidationError) as info:
        Synthesizer("independent", epsilon=1.0, delta=1e-9).fit(wall, declared_instant)
    message = str(info.value)
    assert "\n" not in message and "column 'wall' has Spark type timestamp_ntz" in message, message
    assert "declare it 'type: timestamp_ntz' in the schema, or cast the column to timestamp" in message, message
    instant = _frame(spark, IN_DOMAIN).select("at")
    declared_wall = schema_from_dict({"columns": [
        {"name": "at", "type": "timestamp_ntz", "min": "2020-01-01T00:00:00", "max": "2021-01-01T00:00:00"}]})
    with pytest.raises(DataValidationError) as info:
        Synthesizer("independent", epsilon=1.0, delta=1e-9).fit(instant, declared_wall)
    message = str(info.value)
    assert "\n" not in message and "column 'at' has Spark type timestamp " in message, message
    assert "declare it 'type: timestamp' in the schema, or cast the column to timestamp_ntz" in message, message


def _temporal_rows(n: int, seed: int) -> tuple[list[tuple], dict]:
    """Dates over a decade, instants over a decade, wall-clock times over a year (a tenth null), a count."""
    rng = np.random.default_rng(seed)
    days, seconds, hours = rng.integers(0, 3653, n), rng.uniform(0, 3652 * 86400.0, n), rng.integers(0, 365 * 24, n)
    rows = [(dt.date(2010, 1, 1) + dt.timedelta(days=int(d)),
             dt.datetime(2012, 1, 1, tzinfo=UTC) + dt.timedelta(seconds=float(s)),
             None if i % 10 == 9 else dt.datetime(2021, 1, 1) + dt.timedelta(hours=int(h), minutes=30),
             int(i % 1000)) for i, (d, s, h) in enumerate(zip(days, seconds, hours))]
    truth = {"day": days + (dt.date(2010, 1, 1) - dt.date(1970, 1, 1)).days,
             "at": seconds + (dt.datetime(2012, 1, 1) - dt.datetime(1970, 1, 1)).total_seconds(),
             "wall": (hours[np.arange(n) % 10 != 9] * 3600.0 + 1800.0
                      + (dt.datetime(2021, 1, 1) - dt.datetime(1970, 1, 1)).total_seconds())}
    return rows, truth


TEMPORAL_STRUCT = "day date, at timestamp, wall timestamp_ntz, n bigint"


def test_distributed_profile_of_dates_and_timestamps_equals_the_in_process_one_in_any_time_zone(spark):
    rows, _ = _temporal_rows(3000, seed=2)
    frame = pd.DataFrame(rows, columns=["day", "at", "wall", "n"])
    declared = [DeclaredColumn("day", "date"), DeclaredColumn("at", "timestamp"), DeclaredColumn("wall", "timestamp_ntz")]
    requests = profile_requests(plan_prepass(declared, 1.0, 1e-9))
    local = profile_frame(frame, requests, GRID)
    for zone in ("America/New_York", "Asia/Kolkata"):
        with _session_zone(spark, zone):
            spread = profile_columns(spark.createDataFrame(rows, TEMPORAL_STRUCT).repartition(3), requests, GRID)
        for a, b in zip(spread, local):
            assert a.grid.sum() == b.grid.sum() > 2000
            assert a.grid.tolist() == b.grid.tolist() and a.ties.tolist() == b.ties.tolist()


def test_schema_init_dp_bounds_writes_iso_bounds_of_dates_and_timestamps_then_run_keeps_the_types(spark, tmp_path, capsys):
    rows, truth = _temporal_rows(20_000, seed=3)
    source, out = tmp_path / "t.parquet", tmp_path / "t.yaml"
    with _session_zone(spark, "America/New_York"):
        spark.createDataFrame(rows, TEMPORAL_STRUCT).write.parquet(str(source))
        code = main(["schema", "init", "--input", str(source), "--output", str(out), "--dp-bounds", "8", "--no-mlflow"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    summary = json.loads(captured.out.strip())
    assert summary["todo"] == []
    # all of δ converts ρ (no text column); ρ split over the four columns, spent in full, never more
    planned = rho_from_epsilon(8.0, 1e-9)
    assert summary["dp_prepass"]["rho"] <= planned and summary["dp_prepass"]["rho"] == pytest.approx(planned, rel=1e-9)
    columns = {c["name"]: c for c in yaml.safe_load(out.read_text())["columns"]}
    assert [columns[n]["type"] for n in ("day", "at", "wall", "n")] == ["date", "timestamp", "timestamp_ntz", "integer"]
    assert all(isinstance(columns[n][k], str) for n in ("day", "at", "wall") for k in ("min", "max"))
    assert columns["at"]["min"].endswith("Z") and not columns["wall"]["min"].endswith("Z")
    schema = load_schema(out)
    for name, step in (("day", 1), ("at", TIME_STEP), ("wall", TIME_STEP)):
        low, high = schema[name].min, schema[name].max  # near the 1% / 99% quantiles, on the public grid
        values = truth[name]
        assert np.quantile(values, 0.005) - step <= low <= np.quantile(values, 0.015), (name, columns[name])
        assert np.quantile(values, 0.985) <= high <= np.quantile(values, 0.995) + step, (name, columns[name])
    code = main(["run", "--input", str(source), "--schema", str(out), "--engine", "independent", "--epsilon", "1",
                 "--delta", "1e-9", "--rows", "200", "--output", str(tmp_path / "o.parquet"), "--no-mlflow"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert spark.read.parquet(str(tmp_path / "o.parquet")).schema == spark.read.parquet(str(source)).schema
