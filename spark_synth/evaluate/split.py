"""Fair protocol: a deterministic train / hold-out split, and deterministic bounded samples.

Both are keyed on each row's *content* (a 64-bit hash of its values, as strings, and a seed), not on
partitioning or row order, so the same table gives the same split on any cluster, in any format
layout, on every run. Identical rows always land on the same side, so an exact copy of a training
row can never appear in the hold-out part (which would make hold-out distances look like leaks).

The synthesizer must only ever see the train part; :func:`spark_synth.commands.run` with
``evaluate=...`` fits on ``train_holdout_split(real)[0]`` and evaluates against the hold-out part.
"""

from __future__ import annotations

import pandas as pd

from ..errors import ParameterError

#: Hash buckets used to turn the row hash into a uniform number in [0, 1).
_BUCKETS = 1 << 30


def check_fraction(value: object, name: str = "holdout_fraction") -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.0 < float(value) < 1.0:
        raise ParameterError(name, "a number strictly between 0 and 1", value)
    return float(value)


def check_seed(value: object, name: str = "seed") -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ParameterError(name, "a whole number >= 0", value)
    return int(value)


def row_hash(df, seed: int, salt: str = ""):
    """A Spark column: 64-bit hash of the row's values (cast to strings, nulls marked) and the seed."""
    from pyspark.sql import functions as F

    values = [F.coalesce(F.col(f"`{c}`").cast("string"), F.lit("\u0000null")) for c in df.columns]
    return F.xxhash64(F.lit(f"{salt}:{seed}"), *values)


def train_holdout_split(df, holdout_fraction: float = 0.2, seed: int = 0, unit: str | None = None):
    """Split a Spark DataFrame into ``(train, holdout)`` deterministically (see module docstring).

    About ``holdout_fraction`` of the rows go to the hold-out part (exactly that share in
    expectation; duplicates move together). With ``unit`` (a privacy unit's column) the split is
    by unit: all of a person's rows land on one side, keyed on the unit's value, so the hold-out
    holds people the synthesizer never saw.
    """
    from pyspark.sql import functions as F

    fraction = check_fraction(holdout_fraction)
    seed = check_seed(seed)
    keyed = df if unit is None else df.select(F.col(f"`{unit}`"))
    u = F.pmod(row_hash(keyed, seed, "split"), F.lit(_BUCKETS)) / F.lit(float(_BUCKETS))
    flagged = df.withColumn("__holdout", u < F.lit(fraction))
    train = flagged.filter(~F.col("__holdout")).drop("__holdout")
    holdout = flagged.filter(F.col("__holdout")).drop("__holdout")
    return train, holdout


def hash_sample(df, n: int, seed: int = 0) -> pd.DataFrame:
    """At most ``n`` rows of ``df`` as pandas, chosen and ordered by a content hash (deterministic).

    Spark keeps only the ``n`` smallest hashes per partition (a bounded top-k), so the driver
    receives at most ``n`` rows whatever the table's size. Two tables holding the same rows give
    the same sample in the same order. Timestamp (with time zone) columns arrive as seconds since
    1970-01-01 UTC, as the measure layer reads them: pandas would get the session zone's wall clock.
    A CSV's text columns arrive as text, whatever the schema declares: the public encoder reads a
    date / timestamp / boolean's text as Spark's cast does in the fit
    (:mod:`~spark_synth.schema.text_casts`; zone-less text in UTC, the packaged session zone).
    """
    from pyspark.sql import functions as F
    from pyspark.sql import types as T

    if isinstance(n, bool) or not isinstance(n, int) or n < 1:
        raise ParameterError("sample size", "a whole number >= 1", n)
    columns = list(df.columns)
    ordered = df.withColumn("__h", row_hash(df, seed, "sample")).orderBy(F.col("__h"), *[F.col(f"`{c}`").asc_nulls_first() for c in columns])
    sample = ordered.limit(n).drop("__h")
    zoned = {f.name for f in df.schema.fields if isinstance(f.dataType, T.TimestampType)}
    if zoned:
        sample = sample.select(*[(F.unix_micros(F.col(f"`{c}`")) / F.lit(1_000_000.0)).alias(c) if c in zoned
                                 else F.col(f"`{c}`") for c in columns])
    return sample.toPandas()[columns]
