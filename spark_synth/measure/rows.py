"""A bounded uniform sample of the table's rows as public codes — NOT differentially private.

Only explicit opt-ins that the DP guarantee does not cover use it (DGM's ``validator=real``, the
paper's random forest on real rows); the oracle records each use in the privacy report, which then
states ``dp_guarantee: false``. Everything else in this package releases sums only.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from ..schema import OutOfDomainPolicy, Schema
from ..schema.encoding import encode_frame
from .answers import _measured, out_of_domain_error


def sample_codes(df, schema: Schema, n_rows: int, seed: int, policy: OutOfDomainPolicy = OutOfDomainPolicy.CLIP) -> np.ndarray:
    """At most ``n_rows`` rows of Spark DataFrame ``df`` drawn uniformly (seeded), as an (n, d) code matrix."""
    from pyspark.sql import functions as F

    # one pass: the rows with the n smallest seeded random keys (Spark keeps a top-n per partition)
    selected = df.select(*_measured(df, schema))
    frame = selected.orderBy(F.rand(int(seed))).limit(int(n_rows)).toPandas()
    frame.columns = list(schema.names)
    return _encoded(frame, schema, policy)


def sample_codes_frame(frame: pd.DataFrame, schema: Schema, n_rows: int, seed: int,
                       policy: OutOfDomainPolicy = OutOfDomainPolicy.CLIP) -> np.ndarray:
    """The same over a pandas DataFrame (single-machine use, tests)."""
    chosen = frame.sample(n=min(int(n_rows), len(frame)), random_state=int(seed))[list(schema.names)]
    return _encoded(chosen.reset_index(drop=True), schema, policy)


def _encoded(frame: pd.DataFrame, schema: Schema, policy: OutOfDomainPolicy) -> np.ndarray:
    codes, rejected = encode_frame(frame, schema, OutOfDomainPolicy(policy))
    if rejected.any():
        raise out_of_domain_error([schema.names[j] for j in np.flatnonzero(rejected)])
    return codes
