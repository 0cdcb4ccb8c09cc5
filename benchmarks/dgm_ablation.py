"""DGM ablation on the shared yardstick (../shared/bench), ε = 1, δ = 1e-9: the base engine on the
whole table vs DGM with a random join vs DGM with the DP validator join.

Partitions are public and seeded (columns shuffled with seed k, cut into k near-equal groups), so
every variant splits the same way. Each run goes end to end through ``spark-synth run`` by the
harness; the table gives the mean and 90 % t-interval over ``--runs`` runs of: 2-way TVD over the
column pairs that cross partitions (what the join must restore), all-pairs 2-way and 3-way TVD,
TSTR, the harness's DCR share (rows closer to train than to test; 0.5 is ideal), the DGM paper's
identification risk and membership-inference recall (``paper_privacy``) and wall seconds.
"recovered" is (random − dp) / (random − base) on cross-partition 2-way TVD.

Runs use a random seed each (i.i.d.), so batches run at different times pool exactly: with
``--records DIR`` every run's metrics are written there as a record (n = 1) and the table is over
every record in DIR for its dataset, k and variant — this batch's and earlier ones'; a record may
also be an earlier batch's summary (n, mean and standard deviation per metric).
``--first-run N`` numbers this batch's runs N..runs-1 (the output files of earlier runs stay).

    python benchmarks/dgm_ablation.py [--datasets adult bank_marketing credit_default] [--partitions 2 3 4]
        [--runs 5] [--first-run 0] [--engine fpt] [--engine-option KEY=VALUE ...] [--out-dir /tmp/dgm_bench]
        [--reuse] [--base-dir /tmp/fpt_bench] [--records benchmarks/records/dgm_ablation] [--variants base none dp]
    python benchmarks/dgm_ablation.py --records benchmarks/records/dgm_ablation --from-records   # the table, nothing run
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_runs import SHARED, read_run, run_once  # noqa: E402

sys.path.insert(0, str(SHARED / "bench"))
import harness  # noqa: E402


def random_partitions(names: list[str], k: int) -> list[list[str]]:
    """k near-equal groups of the columns, shuffled with seed k (public, data-independent)."""
    order = np.random.default_rng(k).permutation(len(names))
    return [[names[i] for i in sorted(group)] for group in np.array_split(order, k)]


def cross_partition_tvd(dataset: str, synthetic: str, partitions: list[list[str]]) -> float:
    """Mean 2-way TVD (harness binning) over column pairs in different partitions."""
    schema = harness.Schema(SHARED / "data" / f"{dataset}.schema.json")
    real = harness.code_table(harness.read_table(harness.prepare_split(str(SHARED / "data" / f"{dataset}.csv"), schema)["train_csv"]), schema)
    synth = harness.code_table(harness.read_table(synthetic), schema)
    home = {c: k for k, part in enumerate(partitions) for c in part}
    values = []
    for pair in itertools.combinations(schema.names, 2):
        if home[pair[0]] != home[pair[1]]:
            key, size = harness._joint(real, schema, pair)
            values.append(harness._tvd_keys(key, harness._joint(synth, schema, pair)[0], size))
    return float(np.mean(values))


#: Rows of each table the paper's privacy measures compare (the identification risk is quadratic in it).
PRIVACY_ROWS = 4000


def paper_privacy(dataset: str, synthetic: str) -> dict:
    """The DGM paper's privacy measures on the harness split (spark_synth.evaluate.privacy): the
    entropy-weighted identification risk and the classifier attack's MIA recall, on PRIVACY_ROWS
    seeded rows of train, test and synthetic, in the public encoding."""
    from spark_synth.evaluate import privacy
    from spark_synth.evaluate.encoding import PublicEncoder
    from spark_synth.schema import load_schema

    schema = load_schema(SHARED / "data" / f"{dataset}.schema.json")
    split = harness.prepare_split(str(SHARED / "data" / f"{dataset}.csv"), harness.Schema(SHARED / "data" / f"{dataset}.schema.json"))
    encoder = PublicEncoder(schema)

    def sample(path: str, seed: int):
        frame = harness.read_table(path)
        return encoder.transform(frame.sample(n=min(PRIVACY_ROWS, len(frame)), random_state=seed).reset_index(drop=True))

    train, test, synth = sample(split["train_csv"], 0), sample(split["test_csv"], 1), sample(synthetic, 2)
    return {"identification_risk": privacy.identification_risk(train, synth, encoder.slices),
            **privacy.classifier_attack(train, test, synth, seed=0)}


METRICS = [("cross_2way", "cross 2-way TVD"), ("tvd_2way", "2-way TVD"), ("tvd_3way", "3-way TVD"), ("tstr_best", "TSTR best"),
           ("dcr_share_closer_to_train", "DCR share"), ("identification_risk", "ident. risk"), ("mia_recall", "MIA recall"),
           ("wall_s", "wall s")]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", nargs="+", default=["adult", "bank_marketing", "credit_default"])
    parser.add_argument("--partitions", nargs="+", type=int, default=[2, 3, 4])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--first-run", type=int, default=0, help="this batch runs indices first-run..runs-1")
    parser.add_argument("--records", default=None, help="folder of per-run records to write and pool (module docstring)")
    parser.add_argument("--variants", nargs="+", choices=["base", "none", "dp"], default=["base", "none", "dp"],
                        help="which rows to run and print (base: the engine on the whole table)")
    parser.add_argument("--engine", default="fpt")
    parser.add_argument("--engine-option", action="append", default=[],
                        help="KEY=VALUE for every partition's engine (e.g. cpu_threads=1 when runs share the machine)")
    parser.add_argument("--out-dir", default="/tmp/dgm_bench")
    parser.add_argument("--reuse", action="store_true", help="read the successful runs already in --out-dir instead of re-running them")
    parser.add_argument("--base-dir", default=None,
                        help="reuse the whole-table runs of `fpt_vs_peers.py --out-dir DIR` (same engine defaults, same harness)")
    parser.add_argument("--from-records", action="store_true", help="run nothing: print the table of the --records folder")
    args = parser.parse_args(argv)
    if args.from_records:
        if not args.records:
            parser.error("--from-records needs --records DIR")
        print_header()
        for dataset in args.datasets:
            for k in args.partitions:
                print_rows(dataset, k, {v: read_records(Path(args.records), dataset, k, v) for v in ("base", "none", "dp")},
                           args.variants, args.engine)
        return 0
    out_dir = Path(args.out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    engine_options = {k: json.loads(v) for k, v in (o.split("=", 1) for o in args.engine_option)}
    extra = [f"engine_options={json.dumps(engine_options)}"] if engine_options else []
    print_header()
    for dataset in args.datasets:
        names = list(json.loads((SHARED / "data" / f"{dataset}.schema.json").read_text())["columns"])
        names = [c["name"] for c in names]
        indices = range(args.first_run, args.runs)
        reused = [Path(args.base_dir) / f"{dataset}_{args.engine}_{i}.json" for i in indices] if args.base_dir else []
        base = [] if "base" not in args.variants else (
            [read_run(path) for path in reused] if reused and all(p.exists() for p in reused)
            else [run_once(dataset, i, out_dir, [], args.engine, reuse=args.reuse) for i in indices])
        for k in args.partitions:
            partitions = random_partitions(names, k)
            option = f"partitions={json.dumps(partitions)}"
            rows = {"base": base}
            for variant in [v for v in ("none", "dp") if v in args.variants]:
                rows[variant] = [run_once(dataset, i, out_dir, [option, f"engines={args.engine}", f"validator={variant}", *extra], "dgm",
                                          f"dgm{k}_{variant}", reuse=args.reuse) for i in indices]
            groups = {}
            for variant in ("base", "none", "dp"):
                runs = rows.get(variant, [])
                for r in runs:
                    r["cross_2way"] = cross_partition_tvd(dataset, r["synthetic"], partitions)
                    r.update(paper_privacy(dataset, r["synthetic"]))
                    if args.records:
                        write_record(Path(args.records), dataset, k, variant, Path(r["result"]).stem, r)
                groups[variant] = (read_records(Path(args.records), dataset, k, variant) if args.records
                                   else [single(r) for r in runs])
            print_rows(dataset, k, groups, args.variants, args.engine)
    return 0


def print_header() -> None:
    print("| dataset | k | variant | runs | " + " | ".join(title for _, title in METRICS) + " | recovered |")
    print("|---|---|---|---|" + "---|" * (len(METRICS) + 1))


def print_rows(dataset: str, k: int, groups: dict, variants, engine: str) -> None:
    """The table's rows for one dataset and k from each variant's records (pooled)."""
    cross = {v: pooled_interval(g, "cross_2way")[0] for v, g in groups.items() if g}
    for variant in [v for v in ("base", "none", "dp") if v in variants and groups.get(v)]:
        cells = [f"n = {sum(g['n'] for g in groups[variant])}"]
        for key, _ in METRICS:
            mean, low, high = pooled_interval([g for g in groups[variant] if g["mean"].get(key) is not None], key)
            cells.append(f"{mean:.4g}" if math.isnan(low) else f"{mean:.4g} [{low:.4g}, {high:.4g}]")
        recovered = ""
        if variant == "dp" and {"base", "none"} <= set(cross):
            lost = cross["none"] - cross["base"]
            recovered = f"{(cross['none'] - cross['dp']) / lost:.2f}" if lost > 0 else "–"
        label = {"base": f"{engine} whole table", "none": "dgm random join", "dp": "dgm DP validator"}[variant]
        print(f"| {dataset} | {k} | {label} | " + " | ".join(cells) + f" | {recovered} |")
    sys.stdout.flush()


def single(run: dict) -> dict:
    """One run as a record: n = 1, its metrics as the mean, no spread."""
    values = {key: float(run[key]) for key, _ in METRICS if run.get(key) is not None}
    return {"n": 1, "mean": values, "sd": {key: 0.0 for key in values}}


def write_record(folder: Path, dataset: str, k: int, variant: str, run_name: str, run: dict) -> None:
    folder.mkdir(parents=True, exist_ok=True)
    record = {"dataset": dataset, "k": k, "variant": variant, "run": run_name, **single(run)}
    (folder / f"{dataset}_k{k}_{variant}_{run_name}.json").write_text(json.dumps(record, indent=1) + "\n")


def read_records(folder: Path, dataset: str, k: int, variant: str) -> list[dict]:
    """Every record (single runs and earlier batches' summaries) for one dataset, k and variant."""
    found = [json.loads(p.read_text()) for p in sorted(folder.glob("*.json"))]
    return [r for r in found if (r["dataset"], r["k"], r["variant"]) == (dataset, k, variant)]


def pooled_interval(groups: list[dict], key: str) -> tuple[float, float, float]:
    """Mean and 90 % t-interval of the union of the groups' runs, from each group's n, mean and
    standard deviation (the same numbers ``interval`` gives for the runs themselves)."""
    from scipy import stats

    n = sum(g["n"] for g in groups)
    mean = sum(g["n"] * g["mean"][key] for g in groups) / n
    if n < 2:
        return mean, float("nan"), float("nan")
    squares = sum((g["n"] - 1) * g["sd"][key] ** 2 + g["n"] * (g["mean"][key] - mean) ** 2 for g in groups)
    half = stats.t.ppf(0.95, n - 1) * math.sqrt(squares / (n - 1)) / math.sqrt(n)
    return mean, mean - half, mean + half


if __name__ == "__main__":
    sys.exit(main())
