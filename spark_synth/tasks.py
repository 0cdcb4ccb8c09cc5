"""The Spark task runner: one Spark task per item, on the executors, through DataFrame operations.

Built on ``spark.range(n, numPartitions=n).mapInPandas(...)`` (no ``sparkContext``), so it also
runs on Spark Connect. The function and the tasks travel pickled inside the ``mapInPandas``
closure; each result (or the exception a task raised) comes back pickled and is re-raised on the
driver as it was. Only the pipeline imports this module; engines see the
:class:`~spark_synth.engines.base.TaskRunner` interface.
"""

from __future__ import annotations

from typing import Any, Callable, Iterator, Sequence

import pandas as pd

from .engines.base import TaskRunner, task_seeds

_OUT_SCHEMA = "task long, ok boolean, result binary"


class SparkTaskRunner(TaskRunner):
    """Runs ``fn(task, seed)`` for each task as its own Spark task; results in task order."""

    def __init__(self, spark):
        self.spark = spark

    def map(self, fn: Callable[[Any, int], Any], tasks: Sequence[Any], seed: int = 0) -> list:
        from pyspark import cloudpickle

        tasks = list(tasks)
        if not tasks:
            return []
        payloads = [cloudpickle.dumps((fn, task, s)) for task, s in zip(tasks, task_seeds(seed, len(tasks)))]

        def run(batches: Iterator[pd.DataFrame]) -> Iterator[pd.DataFrame]:
            from pyspark import cloudpickle as pickler

            for batch in batches:
                for index in batch["id"]:
                    function, task, task_seed = pickler.loads(payloads[int(index)])
                    try:
                        result, ok = function(task, task_seed), True
                    except Exception as exc:  # re-raised on the driver with its own type and message
                        result, ok = exc, False
                    yield pd.DataFrame({"task": [int(index)], "ok": [ok], "result": [pickler.dumps(result)]})

        rows = self.spark.range(0, len(tasks), 1, len(tasks)).mapInPandas(run, _OUT_SCHEMA).collect()
        results: dict[int, Any] = {}
        for row in rows:
            value = cloudpickle.loads(row["result"])
            if not row["ok"]:
                raise value
            results[int(row["task"])] = value
        return [results[i] for i in range(len(tasks))]
