"""Every spark-synth engine on the shared yardstick (../shared/bench/harness.py), beside AIM and MST.

    python benchmarks/quality.py [--datasets adult ...] [--engines independent,splice,fpt,dgm]
        [--epsilons 0.3 1 3] [--runs 2] [--delta 1e-9] [--engine-option ENGINE:KEY=VALUE ...]
        [--out-dir /tmp/spark_synth_quality] [--peers-python PATH [--peers aim,mst] [--peer-runs 1 [--peer-first-seed 0]]] [--timeout S]
        [--json OUT]

Defaults: the seven shared datasets, every engine registered in ``spark_synth.engines.ENGINES``,
ε ∈ {0.3, 1, 3}, δ = 1e-9, two runs per cell. Each run is ``spark-synth run --engine E --epsilon ε
--delta δ --rows {rows} --seed S --output {output} --no-mlflow`` (S = 0, 1, … is the sampling seed;
the DP noise itself cannot be seeded) executed by ``harness.py run``: its deterministic 80/20 split
(the engine sees only the train part and writes as many rows), its metrics against that train part
and the real test split, its wall seconds (whole process, JVM start included) and peak RSS (the
harness's ru_maxrss of RUSAGE_CHILDREN: the largest single process it reaps; Spark's JVM is not
reaped by the harness, so for spark-synth this is the driver's Python, not the JVM). Every run's
JSON stays in ``--out-dir``; an earlier result there is deleted before its cell runs, never read.

Peers: AIM and MST at ε = 1 are quoted from the table in ../shared/bench/README.md (same harness,
one run each, 2-core machine). With ``--peers-python`` pointing at a Python that has ``mbi`` 2.0.0
(that README says how to build it), MST (and AIM when ``--peers aim,mst``; ``--max-model-size 20
--time-budget 480``) is run here through the harness at every requested ε, ``--peer-runs`` runs each
(noise seeds from ``--peer-first-seed``: by default one run, seed 0, as the README's).
``--peers mst_published`` (or ``aim,mst,mst_published``) adds that MST at its published noise scale
(``benchmarks/mst_as_published.py``: the shared port spends 2d/3 · ρ), and the ε = 1 comparison then
also shows each engine against the better of AIM and it.

Prints one Markdown table per dataset (mean over runs, ± sample std when runs > 1, plus the
real-test-split floor), the best value per column at each ε, and at ε = 1 each engine's 2-/3-way
TVD against the better of AIM and MST (issue 15's bar: within 15 %). Never asserts anything.
"""

from __future__ import annotations

import argparse
import json
import math
import shlex
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_runs import (PEER_NAMES, PEERS_README, SHARED, harness_run, mbi_problem, mean_std, peer_scores,  # noqa: E402
                          peer_template, read_result, spark_synth_template)

DATASETS = ["adult", "california_housing", "mushroom", "german_credit", "bank_marketing", "credit_default",
            "diabetes_readmission"]
BAR = 1.15  # issue 15: within 15 % of the better of AIM and MST
#: (summary key, column title, decimals, better)
COLUMNS = [("tvd_1way", "1-way TVD", 4, min), ("tvd_2way", "2-way TVD", 4, min), ("tvd_3way", "3-way TVD", 4, min),
           ("sw1", "SW1", 4, min), ("assoc_diff", "assoc Δ", 3, min), ("tstr_best", "TSTR best", 3, max),
           ("wall_s", "wall s", 1, min), ("peak_rss_mb", "peak RSS MB", 0, min)]


def registered_engines() -> list[str]:
    """Names in ``spark_synth.engines.ENGINES`` (listing them imports no engine, torch or pyspark)."""
    from spark_synth.engines import ENGINES

    return list(ENGINES)


def engine_options(pairs: list[str], engines: list[str]) -> dict[str, list[str]]:
    """``ENGINE:KEY=VALUE`` arguments → engine → ["KEY=VALUE", ...]; exits on an unknown engine."""
    options = {engine: [] for engine in engines}
    for pair in pairs:
        engine, sep, option = pair.partition(":")
        if not sep or "=" not in option:
            raise SystemExit(f"--engine-option {pair!r}: expected ENGINE:KEY=VALUE")
        if engine not in options:
            raise SystemExit(f"--engine-option {pair!r}: engine {engine!r} is not among --engines {engines}")
        options[engine].append(option)
    return options


def result_path(out_dir: Path, dataset: str, synthesizer: str, epsilon: float, run: int) -> Path:
    """Where one run's harness JSON goes."""
    return out_dir / f"{dataset}_{synthesizer}_eps{epsilon:g}_run{run}.json"


def measure(dataset: str, synthesizer: str, template: str, epsilon: float, run: int, args) -> dict:
    """One harness run → a record (dataset, synthesizer, ε, run, seed, source + the flat result)."""
    out = result_path(Path(args.out_dir), dataset, synthesizer, epsilon, run)
    harness_run(dataset, template, out, epsilon, args.delta, label=f"{synthesizer} run {run}", timeout_s=args.timeout)
    record = {"dataset": dataset, "synthesizer": synthesizer, "epsilon": epsilon, "run": run, "seed": run,
              "source": "measured", **read_result(out)}
    print(f"  {dataset} {synthesizer} ε={epsilon:g} run {run}: {describe(record)}", flush=True)
    return record


def describe(record: dict) -> str:
    """One progress line for a finished run."""
    if record["status"] != "ok":
        return f"{record['status'].upper()} (see {record['log']})"
    return (f"wall {record['wall_s']:.1f} s, 2-way TVD {record['tvd_2way']:.4f}, 3-way TVD {record['tvd_3way']:.4f}, "
            f"TSTR {record['tstr_best']:.3f}")


def quoted_peers(dataset: str, peers: list[str], table: dict) -> list[dict]:
    """Records of the README's AIM/MST rows (ε = 1, one run each) for DATASET; none where it has no row."""
    records = []
    for peer in peers:
        scores = table.get((dataset, PEER_NAMES[peer]))
        if scores:
            records.append({"dataset": dataset, "synthesizer": PEER_NAMES[peer], "epsilon": 1.0, "run": 0,
                            "source": "README", "status": "ok", **scores})
    return records


def row_label(record: dict) -> str:
    """Synthesizer as shown in the table (quoted peers marked)."""
    return record["synthesizer"] + (" (README)" if record["source"] == "README" else "")


def group_rows(records: list[dict]) -> dict[tuple[str, float], list[dict]]:
    """(label, ε) → its records, in first-seen order, ε ascending."""
    groups: dict[tuple[str, float], list[dict]] = {}
    for record in records:
        groups.setdefault((row_label(record), record["epsilon"]), []).append(record)
    return dict(sorted(groups.items(), key=lambda item: item[0][1]))


def successful_values(records: list[dict], key: str) -> list[float]:
    """KEY of the successful records that have it."""
    return [r[key] for r in records if r["status"] == "ok" and r.get(key) is not None]


def column_mean(records: list[dict], key: str) -> float | None:
    """Mean of KEY over the successful records that have it (None when none has)."""
    values = successful_values(records, key)
    return mean_std(values)[0] if values else None


def cell(records: list[dict], key: str, decimals: int) -> str:
    """Mean (± std over more than one run) of KEY over the successful records, '–' when absent."""
    values = successful_values(records, key)
    if not values:
        return "–"
    mean, std = mean_std(values)
    return f"{mean:.{decimals}f}" + ("" if math.isnan(std) else f" ± {std:.{decimals}f}")


def runs_cell(records: list[dict]) -> str:
    """'ok/total', with the failed runs' status and log."""
    ok = sum(r["status"] == "ok" for r in records)
    failed = [f"{r['status']}: {r['log']}" for r in records if r["status"] != "ok"]
    return f"{ok}/{len(records)}" + (f" ({'; '.join(failed)})" if failed else "")


def print_dataset_table(dataset: str, records: list[dict]) -> None:
    """The Markdown table of one dataset: synthesizer × ε rows, then the real-test-split floor."""
    metric = next((r["tstr_metric"] for r in records if r.get("tstr_metric")), "primary metric")
    train_rows = next((r["n_train"] for r in records if r.get("n_train")), None)
    print(f"\n### {dataset} (TSTR: best {metric} over logistic/ridge, random forest, XGBoost"
          + (f"; {train_rows} train rows" if train_rows else "") + ")\n")
    print("| synthesizer | ε | runs | " + " | ".join(title for _, title, _, _ in COLUMNS) + " |")
    print("|---|---|---|" + "---|" * len(COLUMNS))
    for (label, epsilon), group in group_rows(records).items():
        cells = [cell(group, key, decimals) for key, _, decimals, _ in COLUMNS]
        print(f"| {label} | {epsilon:g} | {runs_cell(group)} | " + " | ".join(cells) + " |")
    floor = next((r["floor"] for r in records if r.get("floor")), None)
    if floor:
        cells = ["–" if floor.get(key) is None
                 else f"{floor[key]:.{decimals}f}" + (" (TRTR)" if key == "tstr_best" else "")
                 for key, _, decimals, _ in COLUMNS]
        print("| floor (real test split) | – | – | " + " | ".join(cells) + " |")


def print_best_per_column(records: list[dict]) -> None:
    """At each ε: which synthesizer has the best mean in each column."""
    groups = group_rows(records)
    for epsilon in sorted({eps for _, eps in groups}):
        parts = []
        for key, title, decimals, better in COLUMNS:
            means = {label: column_mean(group, key) for (label, eps), group in groups.items() if eps == epsilon}
            means = {label: value for label, value in means.items() if value is not None}
            if means:
                winner = better(means, key=means.get)
                parts.append(f"{title} {winner} {means[winner]:.{decimals}f}")
        print(f"\nbest per column at ε = {epsilon:g}: " + (" · ".join(parts) or "no successful run"))


def _references(at_one: list[dict], peers: set[str]) -> dict[str, tuple[str, float]]:
    """2-/3-way TVD key → (label, value) of the best among the records of ``peers`` (synthesizer names)."""
    references = {}
    for key in ("tvd_2way", "tvd_3way"):
        scores = {row_label(r): r[key] for r in at_one if r["synthesizer"] in peers and key in r}
        if scores:
            references[key] = min(scores.items(), key=lambda item: item[1])
    return references


def print_peer_comparison(dataset: str, engines: list[str], records: list[dict]) -> None:
    """At ε = 1: each engine's mean 2-/3-way TVD over the better of AIM and MST (measured if run here),
    and, when ``mst_published`` ran, over the better of AIM and that MST (the shared MST spends 2d/3 · ρ:
    benchmarks/mst_as_published.py)."""
    at_one = [r for r in records if r["epsilon"] == 1.0 and r["status"] == "ok"]
    stated = _references(at_one, {PEER_NAMES["aim"], PEER_NAMES["mst"]})
    ran_published = any(r["synthesizer"] == PEER_NAMES["mst_published"] for r in at_one)
    published = _references(at_one, {PEER_NAMES["aim"], PEER_NAMES["mst_published"]}) if ran_published else {}
    if not stated or not any(r["synthesizer"] in engines for r in at_one):
        print(f"\n{dataset}: no ε = 1 comparison (needs an engine and AIM or MST at ε = 1)")
        return
    sets = [("better of AIM and MST", stated)] + ([("better of AIM and MST (published budget)", published)] if published else [])
    print(f"\n{dataset}, ε = 1, engine / " + " and / ".join(name for name, _ in sets) + f" (issue 15's bar: ≤ {BAR:.2f}):\n")
    print("| engine | reference | 2-way TVD | ratio | 3-way TVD | ratio |")
    print("|---|---|---|---|---|---|")
    titles = {"tvd_2way": "2-way", "tvd_3way": "3-way"}
    for engine in engines:
        group = [r for r in at_one if r["synthesizer"] == engine]
        for name, references in sets:
            cells = []
            for key in ("tvd_2way", "tvd_3way"):
                mean = column_mean(group, key)
                if mean is None or key not in references:
                    cells += ["–", "–"]
                    continue
                ratio = mean / references[key][1]
                cells += [f"{mean:.4f}", f"{ratio:.2f} ({'within' if ratio <= BAR else 'outside'})"]
            print(f"| {engine} | {name} | " + " | ".join(cells) + " |")
    for name, references in sets:
        print(f"\nreference ({name}): " + "; ".join(f"{titles[key]} {value:.4f} ({label})"
                                                  for key, (label, value) in references.items()))


def peer_plan(args) -> tuple[list[str], list[str]]:
    """(peers run here, peers quoted from the README); prints which is which, and why none runs here."""
    wanted = [p.strip().lower() for p in args.peers.split(",") if p.strip()]
    unknown = [p for p in wanted if p not in PEER_NAMES]
    if unknown:
        raise SystemExit(f"--peers: unknown {unknown}; known: {sorted(PEER_NAMES)}")
    problem = mbi_problem(args.peers_python) if args.peers_python else "no --peers-python given"
    measured = [] if problem else wanted
    quoted = [p for p in ("aim", "mst") if p not in measured]
    if measured:
        print(f"peers run here through the harness with {args.peers_python}: "
              f"{', '.join(PEER_NAMES[p] for p in measured)} at ε {args.epsilons}, {args.peer_runs} run(s) each "
              f"(seeds {args.peer_first_seed}..{args.peer_first_seed + args.peer_runs - 1})")
    if quoted:
        print(f"peers quoted from {PEERS_README} (ε = 1, one run each, same harness): "
              f"{', '.join(PEER_NAMES[p] for p in quoted)}" + (f" ({problem})" if problem else ""))
    return measured, quoted


def run_dataset(dataset: str, engines: list[str], options: dict, measured_peers: list[str], args) -> list[dict]:
    """Every engine and measured peer at every ε on DATASET (engines ``--runs`` times, peers ``--peer-runs`` times)."""
    records = []
    for epsilon in args.epsilons:
        for engine in engines:
            for run in range(args.runs):
                template = spark_synth_template(engine, options[engine], seed=run)
                records.append(measure(dataset, engine, template, epsilon, run, args))
        for peer in measured_peers:
            for run in range(args.peer_first_seed, args.peer_first_seed + args.peer_runs):
                records.append(measure(dataset, PEER_NAMES[peer], peer_template(args.peers_python, peer, seed=run), epsilon, run, args))
    return records


def parse_args(argv=None) -> argparse.Namespace:
    """The command line (see the module docstring)."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=DATASETS, help="shared datasets (default: all seven)")
    parser.add_argument("--engines", default=None, help="comma-separated (default: every registered engine)")
    parser.add_argument("--epsilons", nargs="+", type=float, default=[0.3, 1.0, 3.0])
    parser.add_argument("--runs", type=int, default=2, help="runs per engine and ε, sampling seeds 0, 1, …")
    parser.add_argument("--peer-runs", type=int, default=1, help="runs per measured peer and ε, noise seeds --peer-first-seed, +1, …")
    parser.add_argument("--peer-first-seed", type=int, default=0, help="the first peer run's seed (default 0, the README's)")
    parser.add_argument("--delta", type=float, default=1e-9)
    parser.add_argument("--engine-option", action="append", default=[], metavar="ENGINE:KEY=VALUE")
    parser.add_argument("--out-dir", default="/tmp/spark_synth_quality", help="per-run harness JSON results")
    parser.add_argument("--peers-python", default=None, help="a Python with mbi 2.0.0 (../shared/bench/README.md)")
    parser.add_argument("--peers", default="mst", help="peers run with --peers-python: mst (default), aim,mst, mst_published (MST at its published noise scale)")
    parser.add_argument("--timeout", type=float, default=None, help="seconds per run (default: the harness's 1200)")
    parser.add_argument("--json", default=None, help="also write every per-run record to this JSON file")
    return parser.parse_args(argv)


def main(argv=None) -> int:
    args = parse_args(argv)
    known = registered_engines()
    engines = [e.strip() for e in args.engines.split(",") if e.strip()] if args.engines else known
    unknown = [e for e in engines if e not in known]
    if unknown:
        raise SystemExit(f"--engines: unknown {unknown}; registered: {known}")
    missing = [d for d in args.datasets if not (SHARED / "data" / f"{d}.csv").exists()]
    if missing:
        raise SystemExit(f"no {missing} under {SHARED / 'data'} (set SPARK_SYNTH_SHARED)")
    options = engine_options(args.engine_option, engines)
    Path(args.out_dir).mkdir(parents=True, exist_ok=True)
    print(f"command: python {' '.join(shlex.quote(a) for a in sys.argv)}")
    print(f"grid: datasets {args.datasets}; engines {engines}; ε {args.epsilons}; δ {args.delta:g}; "
          f"{args.runs} run(s) per cell; results in {args.out_dir}")
    measured_peers, quoted = peer_plan(args)
    table = peer_scores()
    all_records = []
    for dataset in args.datasets:
        records = run_dataset(dataset, engines, options, measured_peers, args) + quoted_peers(dataset, quoted, table)
        print_dataset_table(dataset, records)
        print_best_per_column(records)
        print_peer_comparison(dataset, engines, records)
        sys.stdout.flush()
        all_records += records
        if args.json:  # after every dataset, so a long grid cut short keeps what it measured
            Path(args.json).write_text(json.dumps(all_records, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
