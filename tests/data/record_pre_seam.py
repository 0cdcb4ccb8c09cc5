"""Record the noise, report, model state and samples of the pre-seam pipeline (commit 2daccb7).

Made the fixture ``pre_seam_replay.json.gz`` that tests/integration/test_seam.py replays. To
re-make it (it only works on the old code, which had ``Accountant`` and plan/adapt engines)::

    git worktree add /tmp/pre-seam 2daccb7
    PYTHONPATH=/tmp/pre-seam python tests/data/record_pre_seam.py tests/data/pre_seam_replay.json.gz
"""
import gzip, json, sys
import numpy as np
import spark_synth.privacy.mechanisms as mech
from spark_synth.session import get_spark
from spark_synth import Synthesizer, load_schema
from spark_synth.io import read_input

spark = get_spark("local", extra_conf={"spark.master": "local[2]", "spark.sql.shuffle.partitions": "2", "spark.default.parallelism": "2"})
import spark_synth

base = spark_synth.__file__.rsplit("/", 1)[0] + "/data/"
schema = load_schema(base + "adult_sample.schema.json")
df = read_input(spark, base + "adult_sample.csv")
out = {}
for engine, options in (("independent", {}), ("splice", {"steps": 120, "patience": 30})):
    noise = []
    original = mech.add_gaussian_noise
    def recording(values, measurement, integer):
        result = original(values, measurement, integer)
        noise.append([int(v) for v in np.asarray(result).ravel()])
        return result
    mech.add_gaussian_noise = recording
    synth = Synthesizer(engine, epsilon=1.0, delta=1e-9, engine_options=options).fit(df, schema)
    mech.add_gaussian_noise = original
    codes = synth.model_.sample_codes(3000, np.random.default_rng(7))
    rows = synth.sample(400, seed=11, spark=spark, partitions=2).toPandas()
    out[engine] = {
        "options": options,
        "noisy_integer_values": noise,
        "releases": [{"name": r["name"], "sigma": r["sigma"], "rho": r["rho"]} for r in synth.privacy_report_["releases"]],
        "rho_spent": synth.privacy_report_["rho_spent"],
        "model_state": synth.model_.to_state(),
        "sample_codes": codes.tolist(),
        "spark_sample_csv": rows.to_csv(index=False),
    }
    print(engine, len(noise), synth.privacy_report_["rho_spent"], file=sys.stderr)
with gzip.open(sys.argv[1], "wt") as f:
    json.dump(out, f)
