"""Conditioned sampling (issue 47): the time to draw 1 M rows under a condition of model probability
about 1 % (and about 0.01 %) against 1 M unconditioned rows, per engine; prints a Markdown table,
never asserts.

Each engine is fitted once at ε = 1, δ = 1e-9 on the shared ``adult.csv`` (the bundled 5,000-row
sample when ../shared is absent) in one local Spark session (``spark_synth.session.get_spark``).
Among the candidate conditions below, the one whose model probability is nearest (in log) to each
target is used; its probability is printed. Every sample is drawn by ``Synthesizer.sample`` (the
path ``spark-synth sample --where`` takes: a sampling plan on the driver, rows on the executors) and
forced by ``.write.format("noop")``; "rejection" is what a sampler without conditioning would do:
unconditioned rows, filtered — timed for ``--rejection-rows`` kept rows and scaled to 1 M (marked as
an extrapolation). Times: the best of ``--repeats``. Also printed: the driver's time to plan
``--rows-per`` on the schema's categorical column with the most values (one conditioning per value). Checks that every conditioned row satisfies its
condition (a filter count on the same DataFrame, outside the timing).

    python benchmarks/conditioned_sampling.py
    python benchmarks/conditioned_sampling.py --engines fpt --rows 1000000 --repeats 3
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

SHARED = Path(__file__).resolve().parents[2] / "shared" / "data"
BUNDLED = Path(__file__).resolve().parents[1] / "spark_synth" / "data"

CANDIDATES = [
    "sex = 'Female' AND income = '>50K'",
    "sex = 'Female' AND income = '>50K' AND age >= 45",
    "sex = 'Female' AND income = '>50K' AND age >= 50 AND `hours-per-week` > 45",
    "race = 'Asian-Pac-Islander' AND income = '>50K'",
    "race = 'Asian-Pac-Islander' AND income = '>50K' AND sex = 'Female'",
    "race = 'Amer-Indian-Eskimo' AND income = '>50K' AND sex = 'Female'",
    "race = 'Other' AND income = '>50K' AND sex = 'Female' AND age >= 40",
    "workclass = 'Never-worked' AND sex = 'Female'",
    "occupation = 'Armed-Forces' AND age >= 30",
]
ENGINE_OPTIONS = {"fpt": {}, "splice": {}, "independent": {}, "dgm": {"n_partitions": 2}}


def _timed(action, repeats: int) -> float:
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        action()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--engines", nargs="+", default=["fpt", "splice", "independent"])
    parser.add_argument("--rows", type=int, default=1_000_000)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--rejection-rows", type=int, default=20_000)
    parser.add_argument("--targets", nargs="+", type=float, default=[0.01, 1e-4])
    args = parser.parse_args()

    from spark_synth import Synthesizer, load_schema
    from spark_synth.io import read_input
    from spark_synth.sample.conditions import parse_condition
    from spark_synth.sample.plan import sampling_plan
    from spark_synth.session import get_spark

    folder, name = (SHARED, "adult") if (SHARED / "adult.csv").exists() else (BUNDLED, "adult_sample")
    spark = get_spark()
    schema = load_schema(folder / f"{name}.schema.json")
    table = read_input(spark, str(folder / f"{name}.csv")).cache()
    print(f"table: {name} ({table.count():,} rows); {args.rows:,} rows per sample; best of {args.repeats}\n")
    print("| engine | condition | model probability | seconds | × unconditioned | all rows satisfy it |")
    print("|---|---|---|---|---|---|")
    plans = []
    for engine in args.engines:
        synth = Synthesizer(engine, epsilon=1.0, delta=1e-9, engine_options=ENGINE_OPTIONS.get(engine, {}))
        synth.fit(table, schema)
        plain = _timed(lambda: synth.sample(args.rows, seed=1, spark=spark).write.format("noop").mode("overwrite").save(),
                       args.repeats)
        print(f"| {engine} | (none) | 1 | {plain:.1f} | 1.0 | |")
        widest = max((c for c in schema if c.type.is_discrete), key=lambda c: c.size)
        start = time.perf_counter()
        sampling_plan(synth.model_, schema, args.rows, rows_per=widest.name)  # the driver's share of --rows-per
        plans.append(f"{engine}: --rows-per {widest.name} ({widest.size} values) planned in "
                     f"{time.perf_counter() - start:.2f} s on the driver")
        probabilities = {}
        for text in CANDIDATES:
            try:
                probabilities[text] = sampling_plan(synth.model_, schema, 10, parse_condition(text, schema)).probability
            except Exception:  # noqa: BLE001 — a candidate the model gives no probability is skipped
                continue
        for target in args.targets:
            text = min(probabilities, key=lambda t: abs(math.log(probabilities[t] / target)))
            frame = synth.sample(args.rows, seed=2, spark=spark, conditions=text)
            seconds = _timed(lambda: frame.write.format("noop").mode("overwrite").save(), args.repeats)
            bad = frame.filter(f"NOT ({text.replace('`', '`')})").count()
            print(f"| {engine} | `{text}` | {probabilities[text]:.2g} | {seconds:.1f} | {seconds / plain:.2f} | "
                  f"{'yes' if bad == 0 else f'NO: {bad}'} |")
            drawn = int(math.ceil(args.rejection_rows / probabilities[text]))
            if drawn <= 50_000_000:
                rejection = _timed(lambda: synth.sample(drawn, seed=3, spark=spark).filter(text).write.format("noop")
                                   .mode("overwrite").save(), 1)
                scaled = rejection * args.rows / args.rejection_rows
                print(f"| {engine} | rejection, same condition: {args.rejection_rows:,} rows from {drawn:,} drawn | | "
                      f"{rejection:.1f} (1 M: ≈ {scaled:.0f}, extrapolated) | {scaled / plain:.0f} (extrapolated) | |")

    print("\n" + "\n".join(plans))


if __name__ == "__main__":
    main()
