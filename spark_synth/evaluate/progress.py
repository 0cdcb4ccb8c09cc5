"""Progress records for long evaluation steps (logger ``spark_synth.evaluate``; the CLI shows them on stderr).

Evaluation reads real rows and is not private anyway, so its records may carry step timings."""

from __future__ import annotations

import time

from ..logs import layer

_log = layer("evaluate")


class Progress:
    """``evaluate [2/7] association structure ...`` / ``... done in 3.1 s`` records."""

    def __init__(self, total: int, enabled: bool = True):
        self.total, self.enabled = total, enabled
        self.step = 0
        self.timings: dict[str, float] = {}

    def run(self, name: str, fn, *args, **kwargs):
        self.step += 1
        if self.enabled:
            _log.info("evaluate [%d/%d] %s ...", self.step, self.total, name)
        started = time.perf_counter()
        result = fn(*args, **kwargs)
        self.timings[name] = time.perf_counter() - started
        if self.enabled:
            _log.info("evaluate [%d/%d] %s done in %.1f s", self.step, self.total, name, self.timings[name])
        return result
