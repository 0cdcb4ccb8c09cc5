"""Distributed generation: N synthetic rows sampled on the executors from a broadcast model.

Rows come from ``spark.range(N)`` split into partitions; the model travels inside the
``mapInPandas`` closure (Spark ships a large one as a broadcast by itself; Spark Connect has no
``sparkContext`` to broadcast with). Partition p draws from a generator seeded
by ``SeedSequence([root_seed, p])``, so one root seed reproduces the whole output (for the same
partition count and Arrow batch size). Codes are decoded back to the schema's types and labels.
"""

from __future__ import annotations

from typing import Iterator

import numpy as np
import pandas as pd

from ..engines import FittedModel
from ..errors import ParameterError
from ..schema import Schema, decode_codes
from ..schema.spark_types import output_struct
from ..logs import layer
from ..session import default_parallelism

_log = layer("sample")

#: Target rows per generated partition.
ROWS_PER_PARTITION = 250_000


def generate_rows(spark, model: FittedModel, schema: Schema, n_rows: int, seed: int, partitions: int | None = None):
    """A lazy DataFrame of ``n_rows`` synthetic rows (schema order and types)."""
    if isinstance(n_rows, bool) or not isinstance(n_rows, (int, np.integer)) or n_rows <= 0:
        raise ParameterError("rows", "a whole number > 0", n_rows)
    if partitions is None:
        partitions = max(default_parallelism(spark), -(-int(n_rows) // ROWS_PER_PARTITION))
        partitions = min(partitions, int(n_rows))
    sampler = _partition_sampler(model, schema, int(seed))
    _log.info("sample: %d rows in %d Spark tasks (%s model%s)", int(n_rows), int(partitions), model.engine,
              "; each task joins the partitions' pieces itself" if model.engine == "dgm" else "")
    return spark.range(0, int(n_rows), numPartitions=int(partitions)).mapInPandas(sampler, output_struct(schema))


def _partition_sampler(model: FittedModel, schema: Schema, seed: int):
    def sample(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        from pyspark import TaskContext

        partition = TaskContext.get().partitionId()
        rng = np.random.default_rng(np.random.SeedSequence([seed, partition]))
        for batch in batches:
            codes = model.sample_codes(len(batch), rng)
            yield decode_codes(codes, schema, rng)

    return sample
