"""Peak resident memory of a process tree, sampled from /proc (Linux): the root process, the JVMs
and every other process below it — what a Spark run really holds (the harness's own peak RSS sees
only the largest process it reaps, never Spark's JVM or its Python workers)."""

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
    the harness runs) and ``run_at_peak`` their parts at that instant."""

    def __init__(self, pid: int, root_key: str = "driver_py"):
        super().__init__(daemon=True)
        self.pid, self.root_key, self.stop = pid, root_key, threading.Event()
        self.keys = list(dict.fromkeys([root_key, "driver_py", "jvm", "workers_py"]))
        self.peak = {**{k: 0.0 for k in self.keys}, "total": 0.0}
        self.run_peak, self.run_at_peak = 0.0, {}

    def run(self) -> None:
        while not self.stop.is_set():
            sample = {k: 0.0 for k in self.keys}
            for pid in _tree(self.pid):
                rss, name = _rss_and_name(pid)
                sample[self._part(pid, name)] += rss
            sample["total"] = sum(sample.values())
            below = sample["total"] - sample[self.root_key]
            if below > self.run_peak:
                self.run_peak, self.run_at_peak = below, {k: v for k, v in sample.items() if k not in (self.root_key, "total")}
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


def _rss_and_name(pid: int) -> tuple[float, str]:
    try:
        status = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return 0.0, ""
    fields = dict(line.split(":", 1) for line in status if ":" in line)
    rss = float(fields.get("VmRSS", "0 kB").split()[0]) / 1024.0
    return rss, fields.get("Name", "").strip()
