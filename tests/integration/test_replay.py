"""fpt and dgm replayed: the noise a recorded fit drew (tests/data/replay_fpt_dgm.json.gz, made by
tests/data/record_replay.py) fed back in gives the same budget split, model state and sample codes —
so a refactor that claims "behaviour unchanged" is checked against the recorded commit's fits."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pytest

from spark_synth import Synthesizer, load_schema
from spark_synth.io import read_input
from tests.replay import CASES, Recorder, assert_close, outcome

pytestmark = pytest.mark.spark

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "replay_fpt_dgm.json.gz"


@pytest.mark.parametrize("engine", sorted(CASES))
def test_the_same_noise_gives_the_same_fit(spark, adult_sample_paths, engine, monkeypatch):
    with gzip.open(FIXTURE, "rt") as f:
        recorded = json.load(f)[engine]
    assert recorded["options"] == CASES[engine]
    recorder = Recorder(recorded)
    recorder.install(monkeypatch)
    data, schema = adult_sample_paths
    synth = Synthesizer(engine, epsilon=1.0, delta=1e-9, engine_options=CASES[engine]).fit(read_input(spark, data),
                                                                                          load_schema(schema))
    assert recorder.exhausted()  # every recorded draw was replayed, in order
    now = outcome(synth)
    assert [(r["name"], r["kind"], r["scope"]) for r in now["releases"]] == [
        (r["name"], r["kind"], r["scope"]) for r in recorded["releases"]]
    # float32 fits may differ in the last bits across builds
    assert_close(recorded["releases"], now["releases"], "releases", rel=1e-6, abs=1e-9)
    assert_close(recorded["model_state"], now["model_state"], rel=1e-6, abs=1e-9)
    same = np.mean(np.asarray(now["sample_codes"]) == np.asarray(recorded["sample_codes"]))
    assert same == 1.0, f"{same:.4%} of the sampled codes are the same"
