"""Record the fpt/dgm replay fixture (``replay_fpt_dgm.json.gz``) that tests/integration/test_replay.py replays.

Run from the repository root on the commit whose behaviour the fixture pins (re-make it only when a
change of behaviour is intended, and say so in the commit)::

    .venv/bin/python tests/data/record_replay.py tests/data/replay_fpt_dgm.json.gz
"""

import gzip
import json
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from spark_synth import Synthesizer, load_schema  # noqa: E402
from spark_synth.io import read_input  # noqa: E402
from spark_synth.session import get_spark  # noqa: E402
from tests.replay import CASES, Recorder, outcome  # noqa: E402

spark = get_spark("local", extra_conf={"spark.master": "local[2]", "spark.sql.shuffle.partitions": "2",
                                       "spark.default.parallelism": "2"})
data = Path(__file__).resolve().parents[2] / "spark_synth" / "data"
schema = load_schema(str(data / "adult_sample.schema.json"))
df = read_input(spark, str(data / "adult_sample.csv"))
commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
out = {"commit": commit}
for engine, options in CASES.items():
    recorder = Recorder()
    originals = recorder.install()
    try:
        synth = Synthesizer(engine, epsilon=1.0, delta=1e-9, engine_options=options).fit(df, schema)
    finally:
        import spark_synth.privacy.mechanisms as mechanisms

        mechanisms.add_gaussian_noise, mechanisms.noisy_max = originals
    out[engine] = {"options": options, "gaussian": recorder.gaussian, "selections": recorder.selections, **outcome(synth)}
    print(engine, len(recorder.gaussian), "releases,", len(recorder.selections), "selections", file=sys.stderr)
with gzip.open(sys.argv[1], "wt") as f:
    json.dump(out, f)
