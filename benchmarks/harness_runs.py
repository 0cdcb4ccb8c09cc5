"""Running spark-synth (or any generator) through the shared yardstick, ``../shared/bench/harness.py``.

The harness is never copied into the project: every run is ``python harness.py run`` in a
subprocess, which splits the data, runs the command, records wall seconds and peak RSS and writes
one JSON result. This module holds what the benchmark scripts share (quality.py, fpt_vs_peers.py,
dgm_ablation.py, dgm_joins.py): where the shared folder is, the ``spark-synth run`` template, a run
that never reads a stale result, reading a result back, the peers' table of
``../shared/bench/README.md``, and small statistics.
"""

from __future__ import annotations

import json
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
SHARED = Path(os.environ.get("SPARK_SYNTH_SHARED", ROOT.parent / "shared"))
HARNESS = SHARED / "bench" / "harness.py"
PEERS_README = SHARED / "bench" / "README.md"

#: Column title in the README's peer table → key of the harness's ``summary`` (plus wall seconds).
README_COLUMNS = {"2-way TVD": "tvd_2way", "3-way TVD": "tvd_3way", "SW1": "sw1", "assoc Δ": "assoc_diff",
                  "TSTR best": "tstr_best", "wall s": "wall_s"}
#: The peers of ../shared/bench/peers/mbi_mechanisms.py: option → name in the README's table, and
#: the arguments the README runs them with (AIM under a 480 s time budget).
PEER_NAMES = {"aim": "AIM", "mst": "MST", "mst_published": "MST (published budget)"}
PEER_ARGS = {"aim": "--max-model-size 20 --time-budget 480", "mst": "", "mst_published": ""}
#: Fidelity keys of the harness's floor (the real test split scored as if it were synthetic).
FLOOR_KEYS = ("tvd_1way", "tvd_2way", "tvd_3way", "sw1", "assoc_diff")


def dataset_path(dataset: str) -> Path:
    """``DIR/NAME`` as the harness wants it: a shared dataset's name (NAME.csv and NAME.schema.json in
    the shared data folder), or a path ``DIR/NAME`` of a generated table."""
    return Path(dataset) if "/" in dataset else SHARED / "data" / dataset


def peer_scores(readme: Path = PEERS_README) -> dict[tuple[str, str], dict[str, float]]:
    """(dataset, peer) → metrics, from the Markdown table of ../shared/bench/README.md."""
    out, header = {}, None
    for line in readme.read_text(encoding="utf-8").splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| dataset"):
            header = cells
        elif header and line.startswith("|") and not set(line) <= set("|-: "):
            row = dict(zip(header, cells))
            values = {}
            for title, key in README_COLUMNS.items():
                match = re.search(r"[-+]?\d*\.?\d+", row.get(title, "").replace("*", ""))
                if match:
                    values[key] = float(match.group())
            out[(row["dataset"], row["peer"])] = values
    return out


def spark_synth_template(engine: str, options: list[str] = (), seed: int | None = None) -> str:
    """Harness ``--cmd`` template of ``spark-synth run --engine ENGINE`` (no seed: a random one, reported)."""
    cli = shlex.quote(str(Path(sys.executable).with_name("spark-synth")))
    seed_flag = "" if seed is None else f" --seed {int(seed)}"
    # the harness fills the template with str.format: braces of an option's JSON are doubled
    extra = "".join(f" --engine-option {shlex.quote(o)}".replace("{", "{{").replace("}", "}}") for o in options)
    return (f"{cli} run --input {{train_csv}} --schema {{schema}} --engine {shlex.quote(engine)} --epsilon {{epsilon}} "
            f"--delta {{delta}} --rows {{rows}}{seed_flag} --output {{output}} --no-mlflow{extra}")


def mbi_problem(python: str) -> str | None:
    """Why PYTHON cannot run the mbi peers (None when it can)."""
    try:
        done = subprocess.run([python, "-c", "import mbi"], capture_output=True, text=True, timeout=120)
    except OSError as exc:
        return f"--peers-python {python}: {exc.strerror or exc}"
    if done.returncode == 0:
        return None
    return f"--peers-python {python}: " + (done.stderr.strip().splitlines() or ["import mbi failed"])[-1]


def peer_template(python: str, mech: str, seed: int = 0) -> str:
    """Harness ``--cmd`` template of ../shared/bench/peers/mbi_mechanisms.py for MECH (aim | mst), or of
    benchmarks/mst_as_published.py (that MST at its published noise scale) for ``mst_published``.
    The peers draw their noise from ``--seed`` (the README's runs: seed 0)."""
    if mech == "mst_published":  # the shared MST with the published noise scale (benchmarks/mst_as_published.py)
        script, mech = Path(__file__).resolve().parent / "mst_as_published.py", "mst"
    else:
        script = SHARED / "bench" / "peers" / "mbi_mechanisms.py"
    return (f"{shlex.quote(python)} {shlex.quote(str(script))} --mech {mech} --train {{train_csv}} --schema {{schema}} "
            f"--epsilon {{epsilon}} --delta {{delta}} --rows {{rows}} --out {{output}} --seed {int(seed)} "
            f"{PEER_ARGS[mech]}").strip()


def remove_stale(out: Path) -> None:
    """Delete an earlier run's result, synthetic output (Spark may write a folder) and log."""
    for stale in (out, out.with_suffix(".synthetic.csv"), out.with_suffix(".log")):
        if stale.is_dir():
            shutil.rmtree(stale)
        else:
            stale.unlink(missing_ok=True)


def harness_run(dataset: str, template: str, out: Path, epsilon: float = 1.0, delta: float = 1e-9,
                label: str | None = None, timeout_s: float | None = None, memory: dict | None = None) -> Path:
    """One ``harness.py run`` of TEMPLATE on DATASET, after removing any stale result at OUT; returns OUT.
    ``memory`` (a dict) receives the peak RSS in MiB of the whole process tree (``process_memory``):
    ``total`` (the harness included: small while the run lasts, up to ~1.5 GB while it scores
    afterwards, alone), ``run`` (the peak of everything below the harness: the run itself — driver,
    JVM, Python workers), each part's own peak, and ``run_at_peak``, the parts at that instant;
    ``run_pss`` and ``run_at_peak_pss`` are the same for the PSS sum (shared library pages counted once)."""
    from process_memory import PeakMemory

    remove_stale(out)
    command = [sys.executable, str(HARNESS), "run", "--dataset", str(dataset_path(dataset)),
               "--epsilon", f"{epsilon:g}", "--delta", f"{delta:g}", "--out", str(out), "--cmd", template]
    if label:
        command += ["--label", label]
    if timeout_s:
        command += ["--timeout", f"{timeout_s:g}"]
    process = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL)
    monitor = PeakMemory(process.pid, root_key="harness")
    if memory is not None:
        monitor.start()
    process.wait()
    monitor.stop.set()
    if memory is not None:
        monitor.join()
        memory.update(monitor.peak)
        memory.update(run=monitor.run_peak, run_at_peak=monitor.run_at_peak, run_pss=monitor.pss_run_peak,
                      run_at_peak_pss=monitor.pss_run_at_peak)
    return out


def read_result(out: Path) -> dict:
    """A harness result as a flat dict: ``status`` ("ok", or why not), the summary, wall seconds,
    peak RSS, the synthetic file, the train-split size, the log and the floor (real test split's
    fidelity, TRTR as its TSTR)."""
    if not out.exists():
        return {"status": "no result", "log": str(out.with_suffix(".log")), "result": str(out)}
    result = json.loads(out.read_text())
    run = result["run"]
    flat = {"status": run["status"], "wall_s": run["wall_s"], "peak_rss_mb": run["peak_rss_mb"], "log": run["log"],
            "result": str(out)}
    if run["status"] != "ok":
        return {**flat, "error": (run.get("score_error") or run.get("log_tail", ""))[-500:]}
    reference = result["reference"]
    floor = {key: reference["real_test_as_synthetic"].get(key) for key in FLOOR_KEYS}
    return {**flat, **result["summary"], "synthetic": result["synthetic"]["path"],
            "n_train": result["split"]["n_train"], "floor": {**floor, "tstr_best": reference["trtr"]["best"]}}


def read_run(out: Path) -> dict:
    """A successful harness run's summary plus wall seconds, peak RSS and the synthetic file's path;
    exits naming the log when the run failed."""
    run = read_result(out)
    if run["status"] == "no result":
        raise SystemExit(f"{out.name}: the harness wrote no result (see {run['log']})")
    if run["status"] != "ok":
        raise SystemExit(f"{out.name} failed ({run['status']}, see {run['log']}): {run.get('error', '')}")
    return run


def run_once(dataset: str, index: int, out_dir: Path, options: list[str], engine: str = "fpt",
             label: str | None = None, reuse: bool = False) -> dict:
    """Run INDEX of ``spark-synth run --engine ENGINE`` at ε = 1, δ = 1e-9 (random sampling seed);
    exits if it failed. ``reuse``: a successful result already at its path is read, not run again
    (to resume an interrupted benchmark with the same options)."""
    out = out_dir / f"{dataset}_{label or engine}_{index}.json"
    if reuse and read_result(out)["status"] == "ok":
        return read_run(out)
    return read_run(harness_run(dataset, spark_synth_template(engine, options), out))


def interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and its 90 % t-interval (NaN bounds for one value)."""
    from scipy import stats

    x = np.asarray(values, dtype=float)
    if len(x) < 2:
        return float(x.mean()), float("nan"), float("nan")
    half = stats.t.ppf(0.95, len(x) - 1) * x.std(ddof=1) / math.sqrt(len(x))
    return float(x.mean()), float(x.mean() - half), float(x.mean() + half)


def mean_std(values: list[float]) -> tuple[float, float]:
    """Mean and sample standard deviation (NaN for one value)."""
    x = np.asarray(values, dtype=float)
    return float(x.mean()), float(x.std(ddof=1)) if len(x) > 1 else float("nan")
