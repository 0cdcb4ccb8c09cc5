"""One engine config, three ways in: ``jobs/run.py`` with a YAML run config, ``spark-synth run`` with
``--engine-option`` and the Python ``Synthesizer`` with a typed config fit the same model from the
same options (issue 48, item 1). Each option is turned into the engine's typed config once, where it
is given, and reaches the engine as it is: an option set to a non-default value (fpt's
``one_way_error``, independent's ``null_floor``) is in all three fits, and so is every default.

A fit draws fresh noise, so the noise here is a seeded stand-in (NOT private; restarted for each fit):
the three fits then see the same noisy answers, and any difference between their models would come
from the options they were given.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import spark_synth.privacy.mechanisms as mechanisms
from spark_synth import Synthesizer, load_schema
from spark_synth.cli import main
from spark_synth.engines import ENGINES
from spark_synth.io import read_input
from tests.replay import assert_close

pytestmark = pytest.mark.spark
REPO = Path(__file__).resolve().parents[2]

#: Each engine's options (small, for speed), one of them set away from its default (NOT_DEFAULT).
CASES = {
    "independent": {"null_floor": 1.0, "one_way_fine_share": 0.4},
    "fpt": {"one_way_error": 0.05, "rounds_per_column": 0.5, "iterations": 10, "final_iterations": 20, "device": "cpu"},
}
NOT_DEFAULT = {"independent": "null_floor", "fpt": "one_way_error"}
ROWS_IN, ROWS_OUT = 800, 20


def load_job(name: str):
    spec = importlib.util.spec_from_file_location(f"job_{name}", REPO / "jobs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class SeededNoise:
    """Stands in for the two noise primitives: the same draws after every :meth:`restart`."""

    def __init__(self, monkeypatch):
        self.restart()
        monkeypatch.setattr(mechanisms, "add_gaussian_noise",
                            lambda values, measurement, integer: np.asarray(values) + self.rng.integers(-3, 4, np.shape(values)))
        monkeypatch.setattr(mechanisms, "noisy_max",
                            lambda measurement, scores: int(np.argmax(np.asarray(scores) + self.rng.gumbel(size=len(scores)))))

    def restart(self) -> None:
        self.rng = np.random.default_rng(2024)


@pytest.fixture
def small_sample(adult_sample_paths, tmp_path) -> tuple[str, str]:
    data, schema = adult_sample_paths
    lines = Path(data).read_text(encoding="utf-8").splitlines(keepends=True)
    small = tmp_path / "adult_small.csv"
    small.write_text("".join(lines[:ROWS_IN + 1]), encoding="utf-8")
    return str(small), schema


@pytest.mark.parametrize("engine", sorted(CASES))
def test_jobs_cli_and_api_fit_the_same_model(spark, spark_home, small_sample, engine, tmp_path, monkeypatch, capsys):
    data, schema = small_sample
    options = CASES[engine]
    noise = SeededNoise(monkeypatch)
    fits: list[Synthesizer] = []
    fit = Synthesizer.fit

    def recorded_fit(self, *args, **kwargs):
        noise.restart()
        fits.append(fit(self, *args, **kwargs))
        return fits[-1]

    monkeypatch.setattr(Synthesizer, "fit", recorded_fit)

    # (a) jobs/run.py: a YAML run config over spark_synth/conf/engines/ENGINE.yaml (epsilon 1, delta 1e-9)
    config = tmp_path / "run.yaml"
    config.write_text(f"input: {data}\nschema: {schema}\nengine: {engine}\nrows: {ROWS_OUT}\nseed: 3\n"
                      f"output: {tmp_path / 'job.parquet'}\nmlflow: false\nengine_options: {json.dumps(options)}\n")
    assert load_job("run").main(["--config", str(config)]) == 0, capsys.readouterr().err
    # (b) spark-synth run, the options as --engine-option KEY=VALUE
    pairs = [item for key, value in options.items() for item in ("--engine-option", f"{key}={json.dumps(value)}")]
    assert main(["run", "--input", data, "--schema", schema, "--engine", engine, "--epsilon", "1", "--delta", "1e-9",
                 "--rows", str(ROWS_OUT), "--seed", "3", "--output", str(tmp_path / "cli.parquet"), "--no-mlflow",
                 *pairs]) == 0, capsys.readouterr().err
    # (c) the Python API, with the engine's typed config
    typed = ENGINES[engine].config_class(**options)
    Synthesizer(engine, epsilon=1.0, delta=1e-9, engine_options=typed).fit(read_input(spark, data), load_schema(schema))

    assert len(fits) == 3
    job, cli, api = (synth.to_dict() for synth in fits)
    for synth in fits:
        assert synth.engine == engine and synth.engine_config == typed  # every option, defaults included
        assert getattr(synth.engine_config, NOT_DEFAULT[engine]) == options[NOT_DEFAULT[engine]]
    assert job["engine_options"] == cli["engine_options"] == api["engine_options"] == options  # as saved
    releases = [[(e.name, e.rho, e.sigma) for e in synth.privacy_report_.entries] for synth in fits]
    assert releases[0] == releases[1] == releases[2]  # the same budget split (one_way_error sets fpt's 1-way share)
    assert_close(api["model"], job["model"], "job model")
    assert_close(api["model"], cli["model"], "cli model")
