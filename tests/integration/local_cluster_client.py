"""Run by tests/integration/test_local_cluster.py in its own process: the CLI's run (splice, to a
Delta path), fit (dgm: its partition models train as executor tasks) and sample (the dgm model, to
a Delta path) on ``local-cluster[2,1,1024]`` — a master and two workers inside the driver's JVM,
each worker launching its executor as a separate JVM process from pyspark's own ``bin/`` and
``jars/``. Argument 1 is the working folder, which holds ``profile.yaml``.

Each command prints its one-line JSON summary (the CLI's own), then this script prints a line
``{"command": ..., "stages": [{"stage": call site, "tasks": n, "executors": [ids]}, ...]}``: the
stages the command ran and the executors their tasks ran on, from Spark's status tracker and store, and at the end ``{"master": ..., "executors": [...]}``: the executors the application had
(the driver is listed as ``driver``; under ``local[N]`` it is the only one and runs every task).
"""

import json
import sys
from pathlib import Path

from spark_synth.cli import main
from spark_synth.session import get_spark

work = Path(sys.argv[1])
data = Path(__file__).resolve().parents[2] / "spark_synth" / "data"
common = ["--input", str(data / "adult_sample.csv"), "--schema", str(data / "adult_sample.schema.json"),
          "--epsilon", "1", "--delta", "1e-9", "--no-mlflow", "--spark-profile", str(work / "profile.yaml")]
dgm_options = ["--engine-option", "n_partitions=2", "--engine-option",
               "engine_options={rounds_per_column: 0.5, iterations: 10, final_iterations: 20}"]
commands = {
    "run-splice": ["run", *common, "--engine", "splice", "--engine-option", "steps=20", "--rows", "300", "--seed", "1",
                   "--output", str(work / "splice_delta")],
    "fit-dgm": ["fit", *common, "--engine", "dgm", *dgm_options, "--model", str(work / "dgm_model")],
    "sample-dgm": ["sample", "--model", str(work / "dgm_model"), "--rows", "400", "--seed", "2",
                   "--output", str(work / "dgm_delta"), "--spark-profile", str(work / "profile.yaml")],
}


def stages_run() -> dict[int, dict]:
    """Every stage the application ran so far: its name (the Python call site) and the executors its
    tasks ran on, from Spark's status tracker and status store (both kept with the UI off)."""
    spark = get_spark()
    tracker, store = spark.sparkContext.statusTracker(), spark.sparkContext._jsc.sc().statusStore()
    stages = {}
    for job in tracker.getJobIdsForGroup():
        for stage_id in tracker.getJobInfo(job).stageIds:
            info = tracker.getStageInfo(stage_id)
            if info is None or info.numCompletedTasks == 0:
                continue  # skipped (its output was reused) or not retained
            tasks = store.taskList(stage_id, info.currentAttemptId, 100000)
            executors = sorted({tasks.apply(i).executorId() for i in range(tasks.size())
                                if tasks.apply(i).status() == "SUCCESS"})
            stages[stage_id] = {"stage": info.name, "tasks": info.numCompletedTasks, "executors": executors}
    return stages


seen: set[int] = set()
for name, argv in commands.items():
    code = main(argv)
    if code:
        sys.exit(code)
    stages = stages_run()
    print(json.dumps({"command": name, "stages": [stages[s] for s in sorted(set(stages) - seen)]}), flush=True)
    seen |= set(stages)

spark = get_spark()
infos = spark.sparkContext._jsc.sc().statusTracker().getExecutorInfos()
print(json.dumps({"master": spark.sparkContext.master,
                  "executors": sorted(f"{info.host()}:{info.port()}" for info in infos),
                  "driver": spark.sparkContext._jsc.sc().env().blockManager().blockManagerId().hostPort()}), flush=True)
spark.stop()
