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
from ..schema import Schema
from ..schema.spark_types import output_struct
from ..logs import layer
from .plan import SamplingPlan, sampling_plan
from ..session import default_parallelism

_log = layer("sample")

#: Target rows per generated partition.
ROWS_PER_PARTITION = 250_000


#: Prefix of the hidden columns through which sampling tasks report a model's ``sampling_counters``
#: (first row of each batch; 0 elsewhere). They are summed by an Observation and dropped.
COUNTER_PREFIX = "_spark_synth_count_"


def generate_rows(spark, model: FittedModel, schema: Schema, n_rows: int, seed: int, partitions: int | None = None,
                  observation=None, plan: SamplingPlan | None = None):
    """A lazy DataFrame of ``n_rows`` synthetic rows (schema order and types).

    ``plan`` (:func:`~.plan.sampling_plan` of the same model and ``n_rows``): the condition every row
    satisfies (drawn exactly from the model conditioned on it) and the ``--rows-per`` strata. For a model with ``sampling_counters`` (DGM: the
    rows its validator never accepted), a pyspark ``Observation`` passed as ``observation`` receives
    each counter summed over the tasks once an action (the write) has run. Post-processing of the
    model: not private."""
    if isinstance(n_rows, bool) or not isinstance(n_rows, (int, np.integer)) or n_rows <= 0:
        raise ParameterError("rows", "a whole number > 0", n_rows)
    plan = plan or sampling_plan(model, schema, int(n_rows))
    if partitions is None:
        partitions = max(default_parallelism(spark), -(-int(n_rows) // ROWS_PER_PARTITION))
        partitions = min(partitions, int(n_rows))
    counters = tuple(model.sampling_counters) if observation is not None else ()
    sampler = _partition_sampler(plan, schema, int(seed), counters)
    _log.info("sample: %d rows in %d Spark tasks (%s model%s%s)", int(n_rows), int(partitions), model.engine,
              model.sampling_note, plan.description)
    rows = spark.range(0, int(n_rows), numPartitions=int(partitions))
    if not counters:
        return rows.mapInPandas(sampler, output_struct(schema))
    from pyspark.sql import functions as F, types as T

    struct = output_struct(schema)
    for name in counters:
        struct = struct.add(T.StructField(COUNTER_PREFIX + name, T.LongType(), nullable=False))
    sums = [F.sum(COUNTER_PREFIX + name).alias(name) for name in counters]
    return rows.mapInPandas(sampler, struct).observe(observation, *sums).drop(*[COUNTER_PREFIX + n for n in counters])


def _partition_sampler(plan: SamplingPlan, schema: Schema, seed: int, counters: tuple[str, ...]):
    def sample(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
        from pyspark import TaskContext

        partition = TaskContext.get().partitionId()
        rng = np.random.default_rng(np.random.SeedSequence([seed, partition]))
        strata_models: dict = {}  # --rows-per: this task's conditioned model of each stratum it meets
        for batch in batches:
            # sample_counted draws the same rows as sample_codes
            frame, counts = plan.frame(batch["id"].to_numpy(), schema, rng, bool(counters), strata_models)
            if not counters:
                yield frame
                continue
            for name in counters:
                column = np.zeros(len(frame), dtype=np.int64)
                column[:1] = int(counts.get(name, 0))
                frame[COUNTER_PREFIX + name] = column
            yield frame

    return sample
