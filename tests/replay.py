"""Record and replay a fit's privacy noise: what the fpt/dgm replay fixture holds and how it is checked.

A fit is a function of the public inputs, the seeds and the released noise. Recording every draw of
the two noise primitives that :mod:`spark_synth.privacy.mechanisms` binds (the exact discrete
Gaussian's noisy values, the exponential mechanism's chosen index) and replaying them into a later
version of the code must give the same budget split, the same model and the same rows — the
"behaviour unchanged" check of a refactor (issue 48). ``tests/data/record_replay.py`` writes the
fixture; ``tests/integration/test_replay.py`` replays it.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import spark_synth.privacy.mechanisms as mechanisms

#: What the fixture fits: each engine's options (small, so the replay takes seconds), at ε = 1, δ = 1e-9.
CASES = {
    "fpt": {"rounds_per_column": 1.0, "iterations": 30, "final_iterations": 60},
    "dgm": {"n_partitions": 2, "engine_options": {"rounds_per_column": 1.0, "iterations": 20, "final_iterations": 40}},
}
SAMPLE_ROWS, SAMPLE_SEED = 2000, 7


class Recorder:
    """Patches the mechanisms' two noise primitives to record (or, with ``recorded``, to replay) every draw."""

    def __init__(self, recorded: dict | None = None):
        self.gaussian: list[list[int]] = []
        self.selections: list[int] = []
        self._replay = None if recorded is None else (iter(recorded["gaussian"]), iter(recorded["selections"]))

    def install(self, monkeypatch=None):
        original_noise, original_max = mechanisms.add_gaussian_noise, mechanisms.noisy_max

        def gaussian(values, measurement, integer):
            if self._replay is not None:
                noisy = np.asarray(next(self._replay[0]), dtype=np.float64)
                assert integer and noisy.size == np.asarray(values).size
                return noisy.reshape(np.shape(values))
            out = original_noise(values, measurement, integer)
            self.gaussian.append([int(v) for v in np.asarray(out).ravel()])
            return out

        def selection(measurement, scores):
            if self._replay is not None:
                return int(next(self._replay[1]))
            index = original_max(measurement, scores)
            self.selections.append(int(index))
            return index

        for name, function in (("add_gaussian_noise", gaussian), ("noisy_max", selection)):
            if monkeypatch is not None:
                monkeypatch.setattr(mechanisms, name, function)
            else:
                setattr(mechanisms, name, function)
        return original_noise, original_max

    def exhausted(self) -> bool:
        return next(self._replay[0], None) is None and next(self._replay[1], None) is None


def outcome(synth) -> dict:
    """What a replayed fit must reproduce: the report's split, the model's state, seeded sample codes."""
    return {
        "releases": [{"name": e.name, "kind": e.kind, "rho": e.rho, "sigma": e.sigma, "scope": e.scope}
                     for e in synth.privacy_report_.entries],
        "model_state": json.loads(json.dumps(synth.model_.to_state())),
        "sample_codes": synth.model_.sample_codes(SAMPLE_ROWS, np.random.default_rng(SAMPLE_SEED)).tolist(),
    }


def assert_close(a, b, path: str = "state", rel: float = 1e-9, abs: float = 1e-12) -> None:
    """``b`` equals ``a`` key by key and item by item, floats within ``rel``/``abs`` (BLAS and torch
    reductions, and float32 fits, may differ in the last bits across machines and builds)."""
    if isinstance(a, dict):
        assert a.keys() == b.keys(), path
        for k in a:
            assert_close(a[k], b[k], f"{path}.{k}", rel, abs)
    elif isinstance(a, (list, tuple)):
        assert len(a) == len(b), path
        for i, (x, y) in enumerate(zip(a, b)):
            assert_close(x, y, f"{path}[{i}]", rel, abs)
    elif isinstance(a, float):
        assert b == pytest.approx(a, rel=rel, abs=abs), path
    else:
        assert a == b, path
