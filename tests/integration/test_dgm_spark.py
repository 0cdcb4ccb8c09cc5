"""The dgm engine on Spark: partition fits as concurrent executor tasks, and `spark-synth run --engine dgm`."""

import json
import time

import numpy as np
import pytest

from spark_synth import Synthesizer, load_schema
from spark_synth.cli import main
from spark_synth.engines import ENGINES, register_engine
from spark_synth.engines.independent import IndependentEngine, IndependentModel
from spark_synth.io import read_input

pytestmark = pytest.mark.spark


@pytest.fixture
def slow_engine():
    class SlowModel(IndependentModel):
        engine = "slow-independent"

    class SlowIndependent(IndependentEngine):
        """``independent`` whose fit from measurements takes 4 s and says when it ran."""

        name = "slow-independent"
        model_class = SlowModel

        def fit_measurements(self, schema, measured):
            started = time.time()
            time.sleep(4.0)  # longer than a busy machine's skew between two Python workers starting
            model = super().fit_measurements(schema, measured)
            model.ran = (started, time.time())
            return model

    register_engine(SlowIndependent)
    yield SlowIndependent
    ENGINES.pop(SlowIndependent.name)


def test_two_partition_fits_run_in_two_concurrent_tasks(spark, adult_sample_paths, slow_engine):
    data, schema_path = adult_sample_paths
    names = load_schema(schema_path).names
    partitions = [list(names[: len(names) // 2]), list(names[len(names) // 2:])]
    synth = Synthesizer("dgm", epsilon=1.0, delta=1e-9, engine_options={
        "partitions": partitions, "engines": "slow-independent", "validator": "none"}).fit(read_input(spark, data), schema_path)
    (a_start, a_end), (b_start, b_end) = (model.ran for model in synth.model_.models)
    assert max(a_start, b_start) < min(a_end, b_end), f"the partition fits did not overlap: {a_start, a_end, b_start, b_end}"
    assert synth.privacy_report_.epsilon_spent == pytest.approx(1.0, rel=1e-9)


def test_run_with_dgm_defaults_on_the_bundled_sample(spark, adult_sample_paths, tmp_path, capsys):
    data, schema_path = adult_sample_paths
    out = tmp_path / "dgm.parquet"
    assert main(["run", "--input", data, "--schema", schema_path, "--engine", "dgm", "--engine-option", "n_partitions=2",
                 "--engine-option", "engine_options={rounds_per_column: 1.0, iterations: 10, final_iterations: 20}",
                 "--epsilon", "1", "--delta", "1e-9", "--rows", "400", "--output", str(out), "--no-mlflow"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["engine"] == "dgm" and summary["epsilon_spent"] == pytest.approx(1.0, rel=1e-9) and summary["rows"] == 400
    assert summary["join"] == {"acceptance": "swap", "filled_rows": 0}  # the swap join keeps every drawn piece
    assert spark.read.parquet(str(out)).count() == 400


def test_the_rows_filled_by_random_joins_are_counted_across_the_sampling_tasks(spark, adult_sample_paths, tmp_path, capsys):
    data, schema_path = adult_sample_paths
    synth = Synthesizer("dgm", epsilon=1.0, delta=1e-9, engine_options={
        "n_partitions": 2, "engines": "independent", "acceptance": "threshold", "keep_fraction": 0.001,
        "max_rounds": 2, "patience": 1}).fit(read_input(spark, data), schema_path)
    n_rows, seed = 3000, 5
    written = synth.write(n_rows, str(tmp_path / "joined.parquet"), seed=seed)
    # what each of the 2 tasks (spark.range's even split) filled, drawn here with the tasks' own generators
    bounds = [0, n_rows // 2, n_rows]
    expected = sum(synth.model_.sample_joined(hi - lo, np.random.default_rng(np.random.SeedSequence([seed, p])))[1]
                   for p, (lo, hi) in enumerate(zip(bounds, bounds[1:])))
    assert 0 < expected < n_rows  # the strict threshold leaves rows to fill
    assert synth.last_sampling_ == {"acceptance": "threshold", "filled_rows": expected}
    assert spark.read.parquet(written).count() == n_rows
    assert f"{expected} row(s) filled by random joins" in capsys.readouterr().err


def test_the_opt_in_forest_validator_reads_a_bounded_row_sample_and_says_so(spark, adult_sample_paths, tmp_path, capsys):
    data, schema_path = adult_sample_paths
    out = tmp_path / "dgm_real.parquet"
    assert main(["run", "--input", data, "--schema", schema_path, "--engine", "dgm", "--engine-option", "n_partitions=2",
                 "--engine-option", "engines=independent", "--engine-option", "validator=real",
                 "--engine-option", "allow_non_dp_validator=true",
                 "--epsilon", "1", "--delta", "1e-9", "--rows", "300", "--output", str(out), "--no-mlflow"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["dp_guarantee"] is False
    assert summary["not_covered_by_dp"] == ["dgm validator=real: random forest trained on real rows"]
    assert summary["epsilon_spent"] == pytest.approx(1.0, rel=1e-9) and spark.read.parquet(str(out)).count() == 300
    # rows sampled later from such a model say so too (issue 45: `sample` printed only epsilon_spent 0.0)
    model = tmp_path / "dgm_real_model"
    assert main(["fit", "--input", data, "--schema", schema_path, "--engine", "dgm", "--engine-option", "n_partitions=2",
                 "--engine-option", "engines=independent", "--engine-option", "validator=real",
                 "--engine-option", "allow_non_dp_validator=true", "--epsilon", "1", "--delta", "1e-9",
                 "--model", str(model), "--no-mlflow"]) == 0
    capsys.readouterr()
    assert main(["sample", "--model", str(model), "--rows", "50", "--output", str(tmp_path / "later.parquet")]) == 0
    later = json.loads(capsys.readouterr().out)
    assert later["epsilon_spent"] == 0.0 and later["dp_guarantee"] is False
    assert later["not_covered_by_dp"] == ["dgm validator=real: random forest trained on real rows"]
    assert main(["run", "--input", data, "--schema", schema_path, "--engine", "dgm", "--engine-option", "validator=real",
                 "--epsilon", "1", "--delta", "1e-9", "--rows", "300", "--output", str(tmp_path / "refused.parquet"),
                 "--no-mlflow"]) == 2
    assert "allow_non_dp_validator" in capsys.readouterr().err and not (tmp_path / "refused.parquet").exists()
