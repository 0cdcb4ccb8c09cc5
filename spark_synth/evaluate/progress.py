"""Progress lines for long evaluation steps (stderr; silent when disabled)."""

from __future__ import annotations

import sys
import time


class Progress:
    """``evaluate [2/7] association structure ... 3.1 s`` lines on stderr."""

    def __init__(self, total: int, enabled: bool = True, stream=None):
        self.total, self.enabled, self.stream = total, enabled, stream or sys.stderr
        self.step = 0
        self.timings: dict[str, float] = {}

    def run(self, name: str, fn, *args, **kwargs):
        self.step += 1
        if self.enabled:
            print(f"evaluate [{self.step}/{self.total}] {name} ...", file=self.stream, flush=True)
        started = time.perf_counter()
        result = fn(*args, **kwargs)
        self.timings[name] = time.perf_counter() - started
        if self.enabled:
            print(f"evaluate [{self.step}/{self.total}] {name} done in {self.timings[name]:.1f} s", file=self.stream, flush=True)
        return result
