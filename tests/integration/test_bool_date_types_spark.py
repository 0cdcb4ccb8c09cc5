"""boolean, date and timestamp columns through the real Spark path: measure, fit, sample, schema init."""

import datetime as dt
import json

import pytest
import yaml

from spark_synth.cli import main
from spark_synth.errors import DataValidationError
from spark_synth.measure.rows import sample_codes
from spark_synth.pipeline import Synthesizer
from spark_synth.schema import OutOfDomainPolicy, schema_from_dict

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
    _frame(spark, IN_DOMAIN).write.parquet(str(source))
    out = tmp_path / "t.yaml"
    code = main(["schema", "init", "--input", str(source), "--output", str(out), "--no-mlflow"])
    captured = capsys.readouterr()
    assert code == 0, captured.err
    assert json.loads(captured.out.strip())["todo"] == ["day", "at"]
    assert yaml.safe_load(out.read_text())["columns"] == [
        {"name": "flag", "type": "boolean"},
        {"name": "day", "type": "date", "min": "TODO", "max": "TODO"},
        {"name": "at", "type": "timestamp", "min": "TODO", "max": "TODO"}]
