"""Peak resident memory of a process tree, sampled from /proc (Linux): the root process, the JVMs
and every other process below it — what a Spark run really holds (the harness's own peak RSS sees
only the largest process it reaps, never Spark's JVM or its Python workers).

Two sums: RSS counts a shared library's resident pages once in every process that maps it (torch's
CUDA build maps ~400 MB of them in each process that imports it), PSS (proportional set size,
``/proc/PID/smaps_rollup``) splits each shared page among its processes, so the PSS sum is the
physical memory the tree holds."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path


class PeakMemory(threading.Thread):
    """Peak RSS (MiB) of a process tree, every 0.2 s: the root process (``root_key``, by default
    ``driver_py``), the JVMs (``jvm``), Spark's Python workers (``workers_py``), every other process
    (``driver_py``: under the harness, spark-synth's own driver) and their sum at one instant
    (``total``); ``run_peak`` is the peak of the processes below the root (what a wrapper such as
    the harness runs) and ``run_at_peak`` their parts at that instant. The ``pss_`` fields are the
    same two for the PSS sum (shared pages counted once)."""

    def __init__(self, pid: int, root_key: str = "driver_py"):
        super().__init__(daemon=True)
        self.pid, self.root_key, self.stop = pid, root_key, threading.Event()
        self.keys = list(dict.fromkeys([root_key, "driver_py", "jvm", "workers_py"]))
        self.peak = {**{k: 0.0 for k in self.keys}, "total": 0.0}
        self.run_peak, self.run_at_peak = 0.0, {}
        self.pss_run_peak, self.pss_run_at_peak = 0.0, {}

    def run(self) -> None:
        while not self.stop.is_set():
            sample, proportional = {k: 0.0 for k in self.keys}, {k: 0.0 for k in self.keys}
            for pid in _tree(self.pid):
                rss, pss, name = _memory_and_name(pid)
                part = self._part(pid, name)
                sample[part] += rss
                proportional[part] += pss
            for parts in (sample, proportional):
                parts["total"] = sum(parts.values())
            below = sample["total"] - sample[self.root_key]
            if below > self.run_peak:
                self.run_peak, self.run_at_peak = below, _without(sample, self.root_key)
            below = proportional["total"] - proportional[self.root_key]
            if below > self.pss_run_peak:
                self.pss_run_peak, self.pss_run_at_peak = below, _without(proportional, self.root_key)
            self.peak = {k: max(v, sample[k]) for k, v in self.peak.items()}
            time.sleep(0.2)

    def _part(self, pid: int, name: str) -> str:
        if pid == self.pid:
            return self.root_key
        if name == "java":
            return "jvm"
        try:
            command = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            command = b""
        return "workers_py" if b"pyspark.daemon" in command or b"pyspark.worker" in command else "driver_py"


def _tree(root: int) -> list[int]:
    children: dict[int, list[int]] = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                ppid = int(Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            children.setdefault(ppid, []).append(int(entry))
    out, todo = [], [root]
    while todo:
        pid = todo.pop()
        out.append(pid)
        todo.extend(children.get(pid, []))
    return out


def _without(parts: dict, root_key: str) -> dict:
    return {k: v for k, v in parts.items() if k not in (root_key, "total")}


def _memory_and_name(pid: int) -> tuple[float, float, str]:
    """RSS and PSS (MiB; PSS falls back to RSS where smaps_rollup is unreadable) and the process name."""
    try:
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0.0, 0.0, ""
    fields = dict(line.split(":", 1) for line in status if ":" in line)
    rss = float(fields.get("VmRSS", "0 kB").split()[0]) / 1024.0
    try:
        rollup = Path(f"/proc/{pid}/smaps_rollup").read_text()
        pss = float(rollup.split("\nPss:", 1)[1].split()[0]) / 1024.0
    except (OSError, IndexError, ValueError):
        pss = rss
    return rss, pss, fields.get("Name", "").strip()
