"""A continuous column's ``decimals``: declared in the schema, drafted from a DECIMAL(p, s), and
applied when codes are decoded to values (a money column is written to the cent, within its bounds)."""

from __future__ import annotations

import numpy as np
import pytest

from spark_synth.errors import SchemaError
from spark_synth.schema import Column, ColumnType, schema_from_dict
from spark_synth.schema.draft import DeclaredColumn, draft_column
from spark_synth.schema.encoding import decode_column


def _money(**extra) -> Column:
    return Column("amount", ColumnType.CONTINUOUS, min=0.004, max=999.996, bins=16, **extra)


def test_decoded_values_have_the_declared_decimals_and_stay_within_the_bounds():
    codes = np.repeat(np.arange(16), 500)
    plain = decode_column(codes, _money(), np.random.default_rng(1)).to_numpy()
    cents = decode_column(codes, _money(decimals=2), np.random.default_rng(1)).to_numpy()
    assert not np.allclose(plain, np.round(plain, 2))  # full precision without decimals
    assert np.array_equal(cents, np.round(cents, 2))
    assert cents.min() >= 0.01 and cents.max() <= 999.99  # the roundest values inside [0.004, 999.996]
    assert np.abs(cents - plain).max() <= 0.006  # the same draws, rounded (or moved in from a bound)
    whole = decode_column(codes, _money(decimals=0), np.random.default_rng(1)).to_numpy()
    assert np.array_equal(whole, np.round(whole)) and whole.min() >= 1 and whole.max() <= 999
    nulls = decode_column(np.full(3, 16), _money(decimals=2), np.random.default_rng(1))
    assert nulls.isna().all()  # the null code stays null


def test_bounds_without_a_round_value_between_them_keep_full_precision():
    narrow = Column("x", ColumnType.CONTINUOUS, min=0.101, max=0.109, decimals=2)
    values = decode_column(np.zeros(50, dtype=int), narrow, np.random.default_rng(0)).to_numpy()
    assert values.min() >= 0.101 and values.max() <= 0.109


@pytest.mark.parametrize("column, message", [
    (dict(name="c", type="categorical", categories=["a"], decimals=2), "only continuous columns"),
    (dict(name="n", type="integer", min=0, max=9, decimals=1), "only continuous columns"),
    (dict(name="d", type="date", min="2020-01-01", max="2021-01-01", decimals=0), "only continuous columns"),
    (dict(name="b", type="boolean", decimals=0), "remove \\['decimals'\\]"),
    (dict(name="x", type="continuous", min=0, max=1, decimals=-1), "whole number from 0 to 12"),
    (dict(name="x", type="continuous", min=0, max=1, decimals=13), "whole number from 0 to 12"),
    (dict(name="x", type="continuous", min=0, max=1, decimals=True), "whole number from 0 to 12"),
    (dict(name="x", type="continuous", min=0, max=1, decimals=1.5), "whole number from 0 to 12"),
])
def test_decimals_are_refused_where_they_mean_nothing(column, message):
    with pytest.raises(SchemaError, match=message):
        schema_from_dict({"columns": [column]})


def test_decimals_round_trip_and_are_drafted_from_a_decimal_type():
    schema = schema_from_dict({"columns": [dict(name="x", type="continuous", min=0, max=1, decimals=3)]})
    assert schema["x"].decimals == 3 and schema.to_dict()["columns"][0]["decimals"] == 3
    assert schema_from_dict(schema.to_dict()) == schema
    assert draft_column(DeclaredColumn("price", "decimal(10,2)", True))["decimals"] == 2
    assert "decimals" not in draft_column(DeclaredColumn("ratio", "double", True))
    assert "decimals" not in draft_column(DeclaredColumn("huge", "decimal(38,18)", True))  # beyond float64's digits
