"""Coupled-noise diff: with the noise coupled so that every noisy release is the same on D and on
D′ = D + one worst-case row, EVERY output of the user path must be the same on both.

The whole CLI path runs in-process (``spark_synth.cli.main``) on each side — ``run`` (fit → MLflow
run, pyfunc model, budget ledger → written Delta table → one JSON line) for every case in
:data:`CASES`, plus ``fit`` (→ saved ``synthesizer.json`` + its MLflow run) and ``sample`` (→ a
Delta table from the saved model) for the default engine. The cases:

* ``independent`` and ``fpt`` on the 2,000-row table below (:data:`D_LARGE`), ``splice`` on a
  200-row one (:data:`D_MEDIUM`, where SPLICE falls back to its anchors' 1-way product): on a few
  dozen rows a column's DP estimate can come out all null, and the run is then refused before
  anything is written;
* ``splice-moments``: SPLICE on a 2,000-row table over the same schema (:data:`D_LARGE`), where its
  whole method runs — 1-way anchors, the adaptive moment query, a first Match, pair anchors each
  chosen by the exponential mechanism and measured, and two Matches pooled (``fits=2``). Asserted
  on D's outputs before the diff (:func:`_check_splice_moments`): no fallback line, exactly one
  moment release and at least two pair anchors in the fit's ``privacy_report.json``, one selection
  per pair anchor (and as many coupled ``noisy_max`` draws), and both pooled fits' loss curves
  (``fit.curve.match_loss``, ``fit.curve.match_loss_2``) in the MLflow run;
* ``dgm`` on the same 2,000 rows: two partitions grouped by DP associations, an FPT and a SPLICE
  partition (measured on the driver through scoped child oracles, fitted as Spark tasks), joined by
  the DP validator (the default ``validator=dp``; ``validator=real`` is documented as not covered and
  is not run). Asserted (:func:`_check_dgm`): the fit summary names the two partitions and engines
  and the validator's measured pairs; the privacy report holds the 6 association pairs, partition
  1's releases, partition 2's scoped moment query, one selection and one measurement per validator
  pair, and no ``not_covered`` entry; the JSON line reports the join.

Every draw of privacy noise is coupled. The two noise primitives
(:func:`spark_synth.privacy.noise.add_gaussian_noise`, the exact discrete Gaussian, and
:func:`~spark_synth.privacy.noise.noisy_max`, the exponential mechanism behind ``oracle.select``) are
patched in every module that binds them (``noise``, ``mechanisms``, ``thresholding``): on D they run
for real and their released outputs are recorded in call order; on D′ call *i* returns exactly D's
*i*-th release, whatever its exact input (the D′ noise is whatever makes the release equal D's: for
the Gaussian, D's noise shifted by the difference of the exact answers, within the sensitivity σ was
calibrated to). DGM draws nothing else: its association pairs, its partitions' engines (through
child oracles) and its validator (exponential-mechanism selection, then discrete-Gaussian pair
marginals) all release through the oracle, i.e. ``release_query``/``select_index`` → these two; the
validator's density ratio is post-processing. To make sure, OpenDP's entry point for running any
measurement (``opendp.core.measurement_invoke``) is watched: a draw outside the two patched functions
on the driver fails the test (:func:`test_uncoupled_draw_is_caught`). Work in Spark's Python workers
(DGM's partition fits, sampling) is outside the patch; noise drawn there would be fresh on each side
and make the diff fail, so a pass shows it draws none. Under this coupling a private pipeline is a
function of public inputs, seeds and the releases only, so any remaining difference between the two
sides is a path from the rows to an output that bypasses the noise — a DP leak.

Compared, after masking only what :data:`MASKED` lists: exit codes, stdout (the JSON line), stderr,
every file written (the saved model directory; each output Delta table's log, checksums and Parquet
parts by SHA-256 — plus its Spark schema and rows read back), and everything in the MLflow store:
every experiment (tags), run (name, status, params, metric histories, tags, inputs/outputs, every
artifact's content), logged model (params, tags, metrics, every artifact incl. ``MLmodel``) and
registered model — the fit runs and the budget ledger's runs alike.

Not exercised: ``run --evaluate`` / ``evaluate`` — evaluation reads real rows, is documented as NOT
private and logs to its own child run tagged ``not private: reads real rows``; ``--out-of-domain
error`` (its refusal, naming a column, is a documented one-bit exception); DGM's ``validator=real``
(documented as not covered). Non-vacuity: the exact answers fed to the noise differ between D and
D′ in every case (asserted), and a deliberately injected leak (the real row count logged as an
MLflow param) makes the diff fail (:func:`test_injected_leak_is_caught`).
"""

from __future__ import annotations

import csv
import hashlib
import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import yaml

from spark_synth.cli import main
from spark_synth.privacy import mechanisms, noise

pytestmark = pytest.mark.spark

# ---- what is masked, and why ------------------------------------------------------------------
#: Every field masked before the diff. None of them is covered by the DP guarantee (docs/privacy.md,
#: "Guarantee"), and none is a function of the rows except the timings, which are documented as
#: NOT covered. Anything not listed here must be byte-for-byte (after JSON/YAML parsing) identical.
MASKED = {
    # Stage timings and wall-clock times. Documented as NOT covered (docs/privacy.md, "What is not covered": "measure
    # timings (the `seconds_…` metrics and the `timings` printed in the summary) grow with the row
    # count"); wall-clock times say when a fit ran, and Delta/MLflow stamp them on every record.
    "seconds, timings (stdout JSON)": "stage timings: documented NOT covered (they grow with the row count)",
    "seconds_* (MLflow metrics)": "stage timings: documented NOT covered (they grow with the row count)",
    "start_time, end_time, creation_timestamp, last_update(d)_timestamp, timestamp, utc_time_created":
        "wall-clock times of MLflow runs, metric values, logged models, MLmodel: NOT covered (when, not what)",
    "Delta log: timestamp, modificationTime, createdTime": "wall-clock times of the output table's commit: NOT covered",
    "_delta_log/.*.crc": "Hadoop's checksums of the Delta log files, which hold those wall-clock times",
    # Random identifiers: NOT covered in the sense that they are not part of the DP release — each is
    # a fresh random draw, independent of the rows (docs/privacy.md: "Each fit has its own fit_id"). Masked by
    # value (see ID_KEYS): each distinct id becomes "<id:N>" in order of first appearance, so
    # references between outputs (ledger entry → fit run → logged model) are still compared.
    "fit_id": "uuid4 drawn per fit by the PrivacyFilter, independent of the rows",
    "MLflow run ids (mlflow_run_id, run_id, source_run_id, fit_run_id, ledger run names)": "random ids MLflow draws",
    "MLflow logged-model ids and MLmodel model_uuid (model_id, models:/m-… URIs)": "random ids MLflow draws",
    "Delta txnId, metaData.id, Spark part-file job uuids": "random ids Delta/Spark draw per write",
    "spark-synth-model-XXXXXXXX in MLmodel (model_code_path, artifacts.synthesizer.uri)":
        "the random tempfile.TemporaryDirectory the pyfunc model is staged in (MLflow records its local path)",
    # The test harness: each side has its own MLflow store (MLflow caches one store per URI, and each
    # side needs an empty budget ledger); its path is the test's choice, not the data's.
    "<store> (the side's MLflow store root) in artifact_uri / artifact_location / MLmodel artifact_path":
        "where this test keeps each side's store",
    # Progress lines on stderr: progress reporting, NOT part of the release. None are expected in
    # process (Spark's console progress bar is the JVM's own stderr), so this masks nothing today.
    "stderr lines matching PROGRESS_LINE": "progress reporting (Spark's console progress bar)",
    # Not a mask but an ordering: SPLICE's pooled Matches run in threads at once (parallel_fits), and
    # how their progress lines interleave is thread scheduling — it differs between two runs on the
    # same table. Each contiguous block of POOLED_FIT_LINE lines is stably sorted by fit number, so
    # every fit's own lines are still compared, in order, line by line.
    "order of interleaved stderr lines matching POOLED_FIT_LINE": "thread scheduling of concurrent pooled fits",
}
#: Keys whose values are masked wherever they occur (stdout JSON, MLflow objects, artifacts, MLmodel, Delta log).
MASKED_KEYS = frozenset({"seconds", "timings", "start_time", "end_time", "creation_timestamp", "last_update_timestamp",
                         "last_updated_timestamp", "timestamp", "utc_time_created", "modificationTime", "createdTime"})
MASKED_METRIC_PREFIX = "seconds_"
PROGRESS_LINE = re.compile(r"^\[Stage \d+:.*\]\s*$")
POOLED_FIT_LINE = re.compile(r"^spark-synth: splice Match, fit (\d+)/\d+: ")

# ---- the neighbouring tables ---------------------------------------------------------------------
SCHEMA = {
    "columns": [
        {"name": "age", "type": "integer", "min": 17, "max": 90},
        {"name": "hours", "type": "continuous", "min": 0, "max": 100, "bins": 8},
        {"name": "sex", "type": "categorical", "categories": ["Female", "Male"]},
        {"name": "edu", "type": "ordinal", "categories": [1, 2, 3], "nullable": False},
    ]
}
#: The added row: every value outside its public domain — a number beyond int64 (clipped to max), −∞
#: (clipped to min), an unknown category (→ null) and a null in a non-nullable column (→ its fixed code).
WORST_ROW = {"age": "99999999999999999999999", "hours": "-inf", "sex": "Unknown", "edu": ""}


def _large_table(n: int, seed: int) -> list[dict]:
    """``n`` rows over the same schema with real dependence (age and hours on edu, hours on sex), so
    that SPLICE's moments rise above their noise and its pair anchors have something to find."""
    rng = np.random.default_rng(seed)
    edu = rng.integers(1, 4, n)
    sex = rng.choice(np.array(["Female", "Male", ""]), n, p=[0.47, 0.47, 0.06])
    age = np.clip(np.rint(rng.normal(22 + 9 * edu, 7)), 17, 90).astype(int)
    hours = np.clip(rng.normal(28 + 6 * edu + 6 * (sex == "Male"), 9), 0, 100)
    return [{"age": str(a), "hours": f"{h:.1f}", "sex": str(s), "edu": str(e)} for a, h, s, e in zip(age, hours, sex, edu)]


#: 2,000 rows: at ε = 1 the DP row count is well above ``min_moment_snr`` (10) × the moments' noise σ
#: (≈ 500 rows would do for these options), so SPLICE measures its moments and keeps a share for pairs
#: instead of falling back to its 1-way product as it does on the 200 rows of D_MEDIUM.
D_LARGE = _large_table(2000, 45)
#: Few enough rows that SPLICE's moments stay below their noise (its small-table path), enough that no
#: column's noisy counts all fall below the floor (on 24 rows: 2.7 % of fits, and the run is refused).
D_MEDIUM = _large_table(200, 46)
D_LARGE_PRIME = D_LARGE + [WORST_ROW]

EPSILON, DELTA, ROWS, SEED = "1", "1e-9", "300", "7"
SPLICE_SMALL = ["components=2", "steps=15", "patience=5", "n_dense=4", "n_sparse=4", "degree=4", "device=cpu", "rake_sweeps=5"]
FPT_SMALL = ["device=cpu", "iterations=5", "final_iterations=10", "rounds_per_column=0.5", "numeric_groups=4", "cpu_threads=1"]
#: One case per id: (engine, its --engine-option values, D). D′ is always D + WORST_ROW.
CASES = {
    # on 24 rows a column's noisy 1-way counts can all fall below the floor, and the run is refused
    # (a column all null: once in a CI run of 2026-12-06): 2,000 rows
    "independent": ("independent", [], D_LARGE),
    # on 200 rows SPLICE falls back to its anchors' 1-way product (no moments, pairs or pooled fits)
    "splice": ("splice", SPLICE_SMALL, D_MEDIUM),
    # on 24 rows FPT's DP estimate of a column can come out all null (the run is then refused): 2,000 rows
    "fpt": ("fpt", FPT_SMALL, D_LARGE),
    # SPLICE's whole method: 1-way anchors, the (adaptive) moment query, a first Match, pair anchors
    # chosen by the exponential mechanism and measured, and two pooled Matches (fits=2)
    "splice-moments": ("splice", [*SPLICE_SMALL, "fits=2"], D_LARGE),
    # DGM: columns grouped by DP associations into two partitions, one FPT and one SPLICE partition
    # (measured on the driver through child oracles, fitted as Spark tasks), joined by the DP
    # validator (the default, validator=dp: cross-partition pairs selected and measured)
    "dgm": ("dgm", ["n_partitions=2", "engines=[fpt, splice]",
                    "engine_options=[{device: cpu, iterations: 5, final_iterations: 10, rounds_per_column: 0.5, "
                    "numeric_groups: 4, cpu_threads: 1}, {components: 2, steps: 15, patience: 5, n_dense: 4, n_sparse: 4, "
                    "degree: 4, device: cpu, rake_sweeps: 5}]", "swap_sweeps=10"], D_LARGE),
}


# ---- the coupling ----------------------------------------------------------------------------------
class CoupledNoise:
    """Patches the noise functions: ``record`` runs them and records each release in call order;
    ``replay`` returns the recorded releases in the same order, ignoring the exact input (only its
    shape must match). Both keep the exact inputs, so the test can show they differ.

    Every module binding of the two noise primitives is patched (``noise`` itself and each
    ``spark_synth`` module that imported them by name: ``mechanisms``, ``thresholding``), and OpenDP's
    own entry point for running a measurement (``opendp.core.measurement_invoke``, behind
    ``Measurement.__call__`` and ``.invoke``) is watched: a draw from any OpenDP measurement outside
    the two patched functions would be privacy noise the coupling does not cover, and
    :meth:`check_complete` fails on it, naming the caller."""

    def __init__(self, monkeypatch):
        import sys

        import opendp.core

        from spark_synth.privacy import thresholding  # noqa: F401  (imported so its binding is patched too)

        self.mode = "record"
        self.releases: list[tuple[str, tuple, object]] = []
        self.exact: dict[str, list] = {"record": [], "replay": []}
        self.cursor = 0
        self.uncoupled: list[str] = []
        self._inside = 0
        real_gaussian, real_max = noise.add_gaussian_noise, noise.noisy_max
        real_invoke = opendp.core.measurement_invoke

        def add_gaussian_noise(values, measurement, integer):
            return self._release("gaussian", np.asarray(values).copy(), lambda: real_gaussian(values, measurement, integer))

        def noisy_max(measurement, scores):
            return self._release("noisy_max", np.asarray(scores, dtype=np.float64).copy(), lambda: real_max(measurement, scores))

        def measurement_invoke(measurement, arg):
            if not self._inside:
                import traceback

                caller = next((f"{f.filename}:{f.lineno} ({f.name})" for f in reversed(traceback.extract_stack()[:-1])
                               if "/spark_synth/" in f.filename), "outside spark_synth")
                self.uncoupled.append(caller)
            return real_invoke(measurement, arg)

        self.patched = []
        for name, module in sorted(sys.modules.items()):
            if (name == "spark_synth" or name.startswith("spark_synth.")) and module is not None:
                for attr, real, fake in (("add_gaussian_noise", real_gaussian, add_gaussian_noise), ("noisy_max", real_max, noisy_max)):
                    if getattr(module, attr, None) is real:
                        monkeypatch.setattr(module, attr, fake)
                        self.patched.append(f"{name}.{attr}")
        assert {"spark_synth.privacy.noise.add_gaussian_noise", "spark_synth.privacy.mechanisms.add_gaussian_noise",
                "spark_synth.privacy.thresholding.add_gaussian_noise", "spark_synth.privacy.noise.noisy_max",
                "spark_synth.privacy.mechanisms.noisy_max"} <= set(self.patched), self.patched
        monkeypatch.setattr(opendp.core, "measurement_invoke", measurement_invoke)

    def _release(self, kind: str, exact: np.ndarray, real):
        self.exact[self.mode].append((kind, exact))
        if self.mode == "record":
            self._inside += 1
            try:
                out = real()
            finally:
                self._inside -= 1
            self.releases.append((kind, exact.shape, np.copy(out) if isinstance(out, np.ndarray) else out))
            return out
        assert self.cursor < len(self.releases), f"D′ made more noise calls than D ({kind} call {self.cursor}): a data-dependent path"
        recorded_kind, shape, out = self.releases[self.cursor]
        assert (recorded_kind, shape) == (kind, exact.shape), \
            f"noise call {self.cursor}: D made {recorded_kind}{shape}, D′ {kind}{exact.shape} — a data-dependent query sequence"
        self.cursor += 1
        return np.copy(out) if isinstance(out, np.ndarray) else out

    def replay(self) -> None:
        self.mode, self.cursor = "replay", 0

    def check_complete(self) -> None:
        assert self.releases, "no noise call was intercepted: the patch missed the mechanisms"
        assert self.cursor == len(self.releases), f"D′ made {self.cursor} noise calls, D {len(self.releases)}"
        assert not self.uncoupled, f"OpenDP measurements invoked outside the coupled noise functions: {self.uncoupled}"

    def count(self, kind: str) -> int:
        """How many releases of ``kind`` (``gaussian``, ``noisy_max``) D made."""
        return sum(k == kind for k, _, _ in self.releases)

    def exact_answers_differ(self) -> bool:
        """Every Gaussian release's exact answer differs between D and D′ (the added row lands in
        every marginal and moment), so the identical releases were not identical inputs."""
        pairs = [(a, b) for (kind, a), (_, b) in zip(self.exact["record"], self.exact["replay"]) if kind == "gaussian"]
        return bool(pairs) and all(not np.array_equal(a, b) for a, b in pairs)


# ---- one side: run the CLI and collect every output -----------------------------------------------
def _write_inputs(work: Path, rows: list[dict]) -> tuple[str, str]:
    data, schema = work / "input.csv", work / "schema.json"
    with data.open("w", newline="", encoding="utf-8") as f:
        writer = csv.DictWriter(f, fieldnames=[c["name"] for c in SCHEMA["columns"]])
        writer.writeheader()
        writer.writerows(rows)
    schema.write_text(json.dumps(SCHEMA), encoding="utf-8")
    return str(data), str(schema)


def _cli(capfd, argv: list[str]) -> dict:
    code = main(argv)
    out, err = capfd.readouterr()
    lines = out.splitlines()
    return {"argv": argv, "exit_code": code, "stdout_lines": len(lines),
            "stdout": json.loads(lines[0]) if code == 0 and len(lines) == 1 else out,
            "stderr": _by_fit([line for line in err.splitlines() if not PROGRESS_LINE.match(line)])}


def _by_fit(lines: list[str]) -> list[str]:
    """``lines`` with each contiguous block of pooled fits' progress lines (POOLED_FIT_LINE) stably
    sorted by fit number: concurrent fits interleave by thread scheduling, not by the data."""
    out, block = [], []
    for line in [*lines, None]:
        match = POOLED_FIT_LINE.match(line) if line is not None else None
        if match:
            block.append((int(match.group(1)), line))
            continue
        out += [text for _, text in sorted(block, key=lambda item: item[0])]
        block = []
        if line is not None:
            out.append(line)
    return out


def _table(spark, path: str) -> dict:
    frame = spark.read.format("delta").load(path)
    rows = [tuple(r) for r in frame.collect()]
    return {"schema": frame.schema.simpleString(), "count": len(rows), "rows": sorted(rows, key=repr)}


def _parse(path: Path):
    """A file's content for the diff: JSON / NDJSON (Delta commits, Delta .crc) and YAML (MLmodel)
    parsed, other text as is, binary files (Parquet, Hadoop checksums) by size and SHA-256."""
    raw = path.read_bytes()
    if path.parent.name == "_delta_log" and path.name.startswith(".") and path.suffix == ".crc":
        return "<masked>"  # Hadoop's checksum of a Delta log file, whose timestamps are masked
    try:
        text = raw.decode("utf-8")
        if path.suffix in (".json", ".crc"):
            try:
                content = json.loads(text)
            except ValueError:  # a Delta commit: one action per line
                content = [json.loads(line) for line in text.splitlines() if line.strip()]
            if path.parent.name == "_delta_log":  # actions and files in a canonical order (kind, then part file)
                if isinstance(content, dict) and isinstance(content.get("allFiles"), list):
                    content["allFiles"] = sorted(content["allFiles"], key=lambda f: f.get("path", ""))
                if isinstance(content, list):
                    content = sorted(content, key=lambda a: (sorted(a), json.dumps(a.get("add", {}).get("path", ""))))
            return content
        if path.name == "MLmodel" or path.suffix in (".yaml", ".yml"):
            return yaml.safe_load(text)
        return text
    except ValueError:  # not UTF-8, or not JSON after all
        return {"bytes": len(raw), "sha256": hashlib.sha256(raw).hexdigest()}


def _tree(root: Path, skip: tuple[str, ...] = ()) -> dict:
    return {str(p.relative_to(root)): _parse(p) for p in sorted(root.rglob("*")) if p.is_file() and p.name not in skip}


def _metric(m) -> dict:
    return {"key": m.key, "value": m.value, "step": m.step, "timestamp": m.timestamp}


def _mlflow_snapshot(uri: str, scratch: Path) -> dict:
    import mlflow
    from mlflow.entities import ViewType
    from mlflow.tracking import MlflowClient

    client = MlflowClient(tracking_uri=uri)
    mlflow.set_tracking_uri(uri)

    def download(artifact_uri: str, name: str) -> dict:
        target = scratch / name
        target.mkdir(parents=True)
        try:
            local = mlflow.artifacts.download_artifacts(artifact_uri=artifact_uri, dst_path=str(target))
        except Exception as exc:  # an empty artifact root
            return {"error": type(exc).__name__}
        return _tree(Path(local))

    snapshot: dict = {"experiments": {}, "registered_models": []}
    for exp in sorted(client.search_experiments(view_type=ViewType.ALL), key=lambda e: e.name):
        runs = client.search_runs([exp.experiment_id], run_view_type=ViewType.ALL, order_by=["attributes.start_time ASC"])
        entry = {"experiment_id": exp.experiment_id, "lifecycle_stage": exp.lifecycle_stage, "tags": dict(exp.tags),
                 "artifact_location": exp.artifact_location, "runs": [], "logged_models": []}
        for run in runs:
            history = {key: [_metric(m) for m in client.get_metric_history(run.info.run_id, key)] for key in sorted(run.data.metrics)}
            entry["runs"].append({
                "run_id": run.info.run_id, "run_name": run.info.run_name, "status": run.info.status,
                "lifecycle_stage": run.info.lifecycle_stage, "start_time": run.info.start_time, "end_time": run.info.end_time,
                "artifact_uri": run.info.artifact_uri, "params": dict(run.data.params), "metrics": dict(run.data.metrics),
                "metric_history": history, "tags": dict(run.data.tags),
                "inputs": repr(run.inputs), "outputs": repr(getattr(run, "outputs", None)),
                "artifacts": download(run.info.artifact_uri, f"run-{run.info.run_id}"),
            })
        for model in sorted(client.search_logged_models(experiment_ids=[exp.experiment_id]), key=lambda m: (m.creation_timestamp, m.name)):
            entry["logged_models"].append({
                "model_id": model.model_id, "name": model.name, "status": str(model.status), "model_type": model.model_type,
                "source_run_id": model.source_run_id, "params": dict(model.params or {}), "tags": dict(model.tags or {}),
                "metrics": [_metric(m) for m in (model.metrics or [])],
                "artifact_location": model.artifact_location, "creation_timestamp": model.creation_timestamp,
                "last_updated_timestamp": model.last_updated_timestamp,
                "artifacts": download(model.artifact_location, f"model-{model.model_id}"),
            })
        snapshot["experiments"][exp.name] = entry
    for registered in client.search_registered_models():
        versions = client.search_model_versions(f"name='{registered.name}'")
        snapshot["registered_models"].append({"name": registered.name, "tags": dict(registered.tags), "versions": [
            {"version": v.version, "status": v.status, "run_id": v.run_id, "source": v.source, "tags": dict(v.tags)} for v in versions]})
    return snapshot


@pytest.fixture(scope="module")
def empty_store(tmp_path_factory) -> Path:
    """An empty MLflow SQLite store, migrated once and copied for each side (creating one takes seconds)."""
    from mlflow.tracking import MlflowClient

    path = tmp_path_factory.mktemp("mlflow-template") / "mlflow.db"
    MlflowClient(tracking_uri=f"sqlite:///{path}").search_experiments()
    return path


def run_side(rows: list[dict], side: str, tmp_path: Path, spark, capfd, monkeypatch, empty_store: Path, engine: str,
             options: list[str], commands: tuple[str, ...]) -> dict:
    """Every output of the CLI path on ``rows``: ``commands`` among ``run``, ``fit``, ``sample``
    (of the saved fit), with ``engine``. Input, schema, outputs and model live at the same paths on both
    sides (``tmp_path/work``, emptied first); each side has its own MLflow store and budget ledger."""
    work = tmp_path / "work"
    if work.exists():
        shutil.rmtree(work)
    work.mkdir()
    spark._jvm.org.apache.spark.sql.delta.DeltaLog.clearCache()  # the output paths are reused by the other side
    data, schema = _write_inputs(work, rows)
    store = tmp_path / f"store-{side}"
    store.mkdir()
    shutil.copyfile(empty_store, store / "mlflow.db")  # the same empty store on both sides
    uri = f"sqlite:///{store}/mlflow.db"
    monkeypatch.setenv("MLFLOW_TRACKING_URI", uri)
    monkeypatch.setenv("SPARK_SYNTH_HOME", str(store / "home"))
    common = ["--input", data, "--schema", schema, "--engine", engine, *[f for o in options for f in ("--engine-option", o)],
              "--epsilon", EPSILON, "--delta", DELTA]
    out: dict = {"cli": {}, "tables": {}}
    if "run" in commands:
        output = str(work / "synthetic")
        out["cli"]["run"] = _cli(capfd, ["run", *common, "--rows", ROWS, "--output", output, "--seed", SEED])
        if out["cli"]["run"]["exit_code"] == 0:
            out["tables"]["run"] = _table(spark, output)
    if "fit" in commands:
        model, sampled = str(work / "model"), str(work / "sampled")
        out["cli"]["fit"] = _cli(capfd, ["fit", *common, "--model", model])
        if out["cli"]["fit"]["exit_code"] == 0 and "sample" in commands:
            out["cli"]["sample"] = _cli(capfd, ["sample", "--model", model, "--rows", ROWS, "--output", sampled, "--seed", SEED])
            out["tables"]["sample"] = _table(spark, sampled)
    # every file written (Delta logs and checksums, Parquet parts, the saved model) except the input itself
    out["files"] = _tree(work, skip=(Path(data).name,))
    out["mlflow"] = _mlflow_snapshot(uri, tmp_path / f"download-{side}")
    return _mask(out, store)


# ---- masking and diffing -------------------------------------------------------------------------
#: Keys whose (string) values are random ids; only these ids are masked, wherever they then occur.
ID_KEYS = frozenset({"fit_id", "spark_synth.fit_id", "mlflow_run_id", "run_id", "source_run_id", "spark_synth.fit_run_id",
                     "mlflow.parentRunId", "model_id", "model_uuid", "txnId"})
_PART_FILE = re.compile(r"part-\d{5}-([0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})-c\d{3}")  # Spark's job uuid
_TEMP_DIR = re.compile(r"spark-synth-model-[A-Za-z0-9_]{8}")  # pyfunc.log_synthesizer_model's tempfile.TemporaryDirectory


def _random_ids(value, key=None, found: dict | None = None) -> dict[str, str]:
    """The random ids in ``value`` (values of ID_KEYS, a Delta table's metaData.id, Spark part-file
    uuids), each with a placeholder numbered in order of first appearance."""
    found = {} if found is None else found
    if isinstance(value, dict):
        for k, v in value.items():
            if k in ("metaData", "metadata") and isinstance(v, dict) and isinstance(v.get("id"), str):
                found.setdefault(v["id"], f"<id:{len(found)}>")
            _random_ids(k, None, found)
            _random_ids(v, k, found)
    elif isinstance(value, (list, tuple)):
        for v in value:
            _random_ids(v, None, found)
    elif isinstance(value, str):
        if key in ID_KEYS and value:
            found.setdefault(value, f"<id:{len(found)}>")
        for match in _PART_FILE.finditer(value):
            found.setdefault(match.group(1), f"<id:{len(found)}>")
    return found


def _mask(snapshot: dict, store: Path) -> dict:
    """Apply :data:`MASKED`: keys in MASKED_KEYS and seconds_* metrics → "<masked>"; the side's store
    root → "<store>"; each random id (see :func:`_random_ids`) → "<id:N>" wherever it occurs (N in
    order of first appearance, so references between outputs are still compared). Any other
    string — including any other hex string — is compared as is."""
    ids = _random_ids(snapshot)
    by_length = sorted(ids, key=len, reverse=True)
    roots = [str(store.resolve()), str(store)]

    def text(value: str) -> str:
        for root in roots:
            value = value.replace(root, "<store>")
        value = _TEMP_DIR.sub("spark-synth-model-<tmp>", value)
        for random_id in by_length:
            if random_id in value:
                value = value.replace(random_id, ids[random_id])
        return value

    def walk(value, key=None):
        if key in MASKED_KEYS or (isinstance(key, str) and key.startswith(MASKED_METRIC_PREFIX)):
            return "<masked>"
        if isinstance(value, dict) and str(value.get("key", "")).startswith(MASKED_METRIC_PREFIX):
            return "<masked>"  # one logged value of a timing metric
        if isinstance(value, dict):
            return {text(str(k)) if isinstance(k, str) else k: walk(v, k) for k, v in value.items()}
        if isinstance(value, (list, tuple)):
            return [walk(v) for v in value]
        if isinstance(value, str):
            stripped = value.strip()
            if stripped[:1] in "[{":  # JSON inside a string (tags like mlflow.log-model.history, params)
                try:
                    return {"json": walk(json.loads(stripped))}
                except ValueError:
                    pass
            return text(value)
        return value

    return walk(snapshot)


def diff(a, b, path: str = "") -> list[str]:
    """Every path where ``a`` and ``b`` differ (recursively through dicts and lists)."""
    if isinstance(a, dict) and isinstance(b, dict):
        out = []
        for key in sorted(set(a) | set(b), key=str):
            if key not in a or key not in b:
                out.append(f"{path}/{key}: only on {'D' if key in a else 'D′'}")
            else:
                out += diff(a[key], b[key], f"{path}/{key}")
        return out
    if isinstance(a, list) and isinstance(b, list) and len(a) == len(b):
        return [d for i, (x, y) in enumerate(zip(a, b)) for d in diff(x, y, f"{path}[{i}]")]
    if a != b and not (isinstance(a, float) and isinstance(b, float) and np.isnan(a) and np.isnan(b)):
        return [f"{path}: D={_short(a)} D′={_short(b)}"]
    return []


def _short(value) -> str:
    text = repr(value)
    return text if len(text) < 300 else text[:300] + "…"


# ---- the tests -----------------------------------------------------------------------------------
@pytest.mark.parametrize("case", list(CASES))
def test_coupled_noise_diff(case, tmp_path, spark, capfd, monkeypatch, empty_store):
    engine, options, table = CASES[case]
    coupling = CoupledNoise(monkeypatch)
    fit_and_sample = case == "independent"  # the save/load path is engine-agnostic: once is enough
    side = dict(spark=spark, capfd=capfd, monkeypatch=monkeypatch, empty_store=empty_store, engine=engine,
                options=options, commands=("run", "fit", "sample") if fit_and_sample else ("run",))
    side_d = run_side(table, "D", tmp_path, **side)
    for name, call in side_d["cli"].items():
        assert call["exit_code"] == 0 and call["stdout_lines"] == 1, (name, call)
        # stderr holds progress lines only (spark_synth.logs): NOT masked, so the diff below checks that
        # they are the same on both tables (stage names, pass/round numbers, losses of fits to noise)
        assert all(line.startswith("spark-synth: ") and not line.startswith("spark-synth: error")
                   for line in call["stderr"]), (name, call["stderr"])
    assert any("measure: pass 1 over the table" in line for line in side_d["cli"]["run"]["stderr"])
    MACHINERY.get(case, lambda *_: None)(side_d, coupling)
    coupling.replay()
    side_d_prime = run_side(table + [WORST_ROW], "D-prime", tmp_path, **side)
    coupling.check_complete()
    # Not vacuous: the exact answers behind the releases differ (D′ has one more row), and the
    # outputs are all there: one MLflow run per fit, each with its artifacts and a logged model,
    # one ledger entry per fit, every table written.
    assert coupling.exact_answers_differ(), "D and D′ gave the same exact answers: the test would prove nothing"
    experiments = side_d["mlflow"]["experiments"]
    fits = 2 if fit_and_sample else 1
    assert len(experiments["spark-synth"]["runs"]) == len(experiments["spark-synth"]["logged_models"]) == fits
    assert all(r["artifacts"] for r in experiments["spark-synth"]["runs"])
    ledger = [e for name, e in experiments.items() if name.startswith("spark-synth-budget:")]
    assert len(ledger) == 1 and len(ledger[0]["runs"]) == fits
    assert [t["count"] for t in side_d["tables"].values()] == [int(ROWS)] * (1 + fit_and_sample)
    differences = diff(side_d, side_d_prime)
    assert differences == [], "outputs differ under coupled noise (a path bypassing the noise):\n" + "\n".join(differences)


# ---- the engines' machinery really ran (checked on D's outputs, before the diff) ---------------------
def _fit_run(side: dict) -> dict:
    (run,) = side["mlflow"]["experiments"]["spark-synth"]["runs"]
    return run


def _releases(side: dict) -> list[dict]:
    """The fit's privacy report, as logged to its MLflow run: every release in order."""
    return _fit_run(side)["artifacts"]["privacy_report.json"]["releases"]


def _splice_machinery(releases: list[dict], scope: str = "") -> dict:
    """SPLICE's releases within ``scope``: the moment query measured, the pair anchors (2-way
    marginals) each chosen by one exponential-mechanism selection and measured."""
    mine = [r for r in releases if r.get("scope", "") == scope]
    moments = [r for r in mine if r["kind"] == "measurement" and r["name"] == "sliced-chebyshev-moments"]
    selections = [r for r in mine if r["kind"] == "selection"]
    pairs = [r for r in mine if r["kind"] == "measurement" and r["name"].startswith("marginal") and "," in r["name"]]
    return {"moments": len(moments), "selections": len(selections), "pairs": len(pairs)}


def _check_splice_moments(side: dict, coupling: CoupledNoise) -> None:
    stderr = side["cli"]["run"]["stderr"]
    assert not any("too few rows" in line for line in stderr), stderr  # no fallback to the 1-way product
    assert any("splice: pair anchors" in line for line in stderr), stderr
    found = _splice_machinery(_releases(side))
    assert found["moments"] == 1 and found["selections"] >= 2 and found["pairs"] == found["selections"], found
    assert coupling.count("noisy_max") == found["selections"]
    # two Matches pooled (fits=2): each logs its loss curve
    curves = {k for k in _fit_run(side)["metric_history"] if k.startswith("fit.curve.match_loss")}
    assert curves == {"fit.curve.match_loss", "fit.curve.match_loss_2"}, curves


def _check_dgm(side: dict, coupling: CoupledNoise) -> None:
    run = _fit_run(side)
    summary = run["artifacts"]["fit_summary.json"]
    assert summary["validator"] == "dp" and summary["engines"] == ["fpt", "splice"] and len(summary["partitions"]) == 2, summary
    assert summary["validator_pairs"] and summary["validator_rho"] > 0, summary
    report = run["artifacts"]["privacy_report.json"]
    assert report["dp_guarantee"] is True and not any(r["kind"] == "not_covered" for r in report["releases"]), report
    scopes = {}
    for r in report["releases"]:
        scopes.setdefault((r.get("scope", ""), r["kind"]), []).append(r)
    # the association pairs that grouped the columns, both partitions' engines, the validator's pairs
    assert len(scopes[("association", "measurement")]) == 6, sorted(scopes)  # every pair of the 4 columns
    assert scopes[("partition1", "measurement")], sorted(scopes)  # FPT's 1-way tables (and its rounds)
    assert _splice_machinery(report["releases"], "partition2")["moments"] == 1, sorted(scopes)  # SPLICE's scoped moments
    n_pairs = len(summary["validator_pairs"])
    assert len(scopes[("validator", "selection")]) == len(scopes[("validator", "measurement")]) == n_pairs, sorted(scopes)
    assert coupling.count("noisy_max") >= n_pairs
    assert side["cli"]["run"]["stdout"]["join"], side["cli"]["run"]["stdout"]


def _check_splice_small(side: dict, coupling: CoupledNoise) -> None:
    stderr = side["cli"]["run"]["stderr"]
    assert any("too few rows" in line for line in stderr), stderr  # the small-table path: the 1-way product


#: Per case, what shows the engine's own machinery ran (or, for "splice", its small-table path).
MACHINERY = {"splice": _check_splice_small, "splice-moments": _check_splice_moments, "dgm": _check_dgm}


def test_uncoupled_draw_is_caught(monkeypatch):
    """The coupling has no blind spot on the driver: a draw from an OpenDP measurement that does not
    go through the patched noise functions (here one made directly, as an engine calling OpenDP itself
    would) fails :meth:`CoupledNoise.check_complete`; draws through them do not."""
    coupling = CoupledNoise(monkeypatch)
    measurement, _, _ = noise.calibrated_measurement(0.5, 1, integer=True)
    released = mechanisms.add_gaussian_noise(np.array([3, 4]), measurement, integer=True)  # coupled: recorded on D
    coupling.replay()
    assert np.array_equal(mechanisms.add_gaussian_noise(np.array([3, 5]), measurement, integer=True), released)  # and replayed on D′
    coupling.check_complete()
    measurement([3, 5])  # uncoupled
    with pytest.raises(AssertionError, match="OpenDP measurements invoked outside the coupled noise functions"):
        coupling.check_complete()


def test_injected_leak_is_caught(tmp_path, spark, capfd, monkeypatch, empty_store):
    """The diff has power: a deliberately injected leak — the real row count logged as an MLflow
    param during ``fit`` — makes it fail, at that param and nowhere else."""
    import mlflow

    from spark_synth import commands
    from spark_synth.io import read_input

    real_fit = commands._fit_from_input

    def leaky_fit(synth, spark_session, source, *rest):
        real_fit(synth, spark_session, source, *rest)
        mlflow.log_param("debug_rows", read_input(spark_session, source).count())

    monkeypatch.setattr(commands, "_fit_from_input", leaky_fit)
    coupling = CoupledNoise(monkeypatch)
    side = dict(spark=spark, capfd=capfd, monkeypatch=monkeypatch, empty_store=empty_store, engine="independent", options=[],
                commands=("fit",))
    # 2,000 rows: on the 24-row table `independent`'s fit is refused now and then (a column's noisy
    # counts all below the floor), and the leak would then be shown by a failed fit only
    side_d = run_side(D_LARGE, "D", tmp_path, **side)
    assert side_d["cli"]["fit"]["exit_code"] == 0, side_d["cli"]["fit"]
    coupling.replay()
    side_d_prime = run_side(D_LARGE_PRIME, "D-prime", tmp_path, **side)
    coupling.check_complete()
    differences = diff(side_d, side_d_prime)
    leaked = f"/params/debug_rows: D='{len(D_LARGE)}' D′='{len(D_LARGE_PRIME)}'"
    # the run's param, and (MLflow 3 copies run params to a model logged after them) its copy on the
    # run's logged model — which copy MLflow makes has varied with the tests run before; the run's is always there
    assert f"/mlflow/experiments/spark-synth/runs[0]{leaked}" in differences, differences
    assert set(differences) <= {f"/mlflow/experiments/spark-synth/{where}{leaked}" for where in ("logged_models[0]", "runs[0]")}
