"""Peak resident memory of a process tree, sampled from /proc (Linux): the root process, the JVMs
and every other process below it — what a Spark run really holds (the harness's own peak RSS sees
only the largest process it reaps, never Spark's JVM or its Python workers)."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path


class PeakMemory(threading.Thread):
    """Peak RSS (MiB) of a process tree, every 0.2 s: the root process (``driver_py``), the JVMs
    (``jvm``), every other process (``workers_py``) and their sum at one instant (``total``)."""

    def __init__(self, pid: int):
        super().__init__(daemon=True)
        self.pid, self.stop = pid, threading.Event()
        self.peak = {"driver_py": 0.0, "jvm": 0.0, "workers_py": 0.0, "total": 0.0}

    def run(self) -> None:
        while not self.stop.is_set():
            sample = {"driver_py": 0.0, "jvm": 0.0, "workers_py": 0.0}
            for pid in _tree(self.pid):
                rss, name = _rss_and_name(pid)
                key = "driver_py" if pid == self.pid else "jvm" if name == "java" else "workers_py"
                sample[key] += rss
            sample["total"] = sum(sample.values())
            self.peak = {k: max(v, sample[k]) for k, v in self.peak.items()}
            time.sleep(0.2)


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
