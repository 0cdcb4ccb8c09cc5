"""A public, seeded generator of a large table with near-functional numeric pairs (issue 15, item 2).

Flight-like rows, 16 columns, the dependence the shared tables lack at scale:

* ``sched_dep`` (clock time HHMM), ``dep_time`` = sched_dep + dep_delay minutes (as a clock time),
  ``dep_hour`` = dep_time // 100 (a function of dep_time);
* ``dep_delay`` (minutes, heavy right tail), ``arr_delay`` ≈ dep_delay + N(0, 8²) − a taxi effect;
* ``distance`` (miles), ``air_time`` ≈ distance / 7.5 + 18 + N(0, 6²) (minutes);
* ``taxi_out``, ``taxi_in`` (minutes), ``taxi_total`` = taxi_out + taxi_in (a sum of two columns);
* ``carrier`` (10), ``origin`` (30), ``dest`` (30) categoricals; origin sets distance's scale;
* ``month`` (ordinal 1..12), ``day_of_week`` (ordinal 1..7), ``late`` = arr_delay > 15 (the target).

Writes ``NAME.csv`` and ``NAME.schema.json`` in the shared harness's format (public bounds and
categories only: nothing about the schema is learned from the rows), so the harness and
``benchmarks/quality.py`` take it like a shared dataset:

    python benchmarks/dependent_table.py --out /tmp/dependent --rows 336000 --seed 0
    SPARK_SYNTH_SHARED=... python benchmarks/quality.py ...   # with a data/ folder holding the files
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

NAME = "flights"


def _clock(minutes: np.ndarray) -> np.ndarray:
    """Minutes after midnight (wrapped to one day) → HHMM clock integers."""
    minutes = np.mod(minutes, 24 * 60)
    return (minutes // 60) * 100 + minutes % 60


def generate(rows: int, seed: int) -> pd.DataFrame:
    """The table (module docstring), reproducible from ``seed``."""
    rng = np.random.default_rng(seed)
    carrier = rng.choice([f"C{i}" for i in range(10)], rows, p=np.arange(10, 0, -1) / 55)
    origin_index = rng.choice(30, rows, p=np.arange(30, 0, -1) / 465)
    dest_index = (origin_index + rng.integers(1, 30, rows)) % 30
    hub_scale = 300 + 60 * (origin_index % 7) + 40 * (dest_index % 5)
    distance = np.clip(rng.gamma(2.0, hub_scale / 2.0 + 200), 50, 5000).round()
    air_time = np.clip(distance / 7.5 + 18 + rng.normal(0, 6, rows), 10, 700).round()
    sched_minutes = rng.choice(np.arange(5 * 60, 23 * 60, 5), rows)
    dep_delay = np.clip(np.where(rng.random(rows) < 0.7, rng.normal(-3, 4, rows), rng.exponential(35, rows)), -30, 600).round()
    taxi_out = np.clip(rng.gamma(4.0, 4.0, rows), 1, 120).round()
    taxi_in = np.clip(rng.gamma(2.5, 3.0, rows), 1, 90).round()
    arr_delay = np.clip(dep_delay + rng.normal(0, 8, rows) + (taxi_out - 16) * 0.5, -60, 700).round()
    dep_minutes = sched_minutes + dep_delay.astype(int)
    dep_time = _clock(dep_minutes)
    return pd.DataFrame({
        "month": rng.integers(1, 13, rows),
        "day_of_week": rng.integers(1, 8, rows),
        "carrier": carrier,
        "origin": [f"A{i:02d}" for i in origin_index],
        "dest": [f"A{i:02d}" for i in dest_index],
        "sched_dep": _clock(sched_minutes),
        "dep_time": dep_time,
        "dep_hour": dep_time // 100,
        "dep_delay": dep_delay.astype(int),
        "arr_delay": arr_delay.astype(int),
        "distance": distance,
        "air_time": air_time,
        "taxi_out": taxi_out.astype(int),
        "taxi_in": taxi_in.astype(int),
        "taxi_total": (taxi_out + taxi_in).astype(int),
        "late": np.where(arr_delay > 15, "yes", "no"),
    })


def schema() -> dict:
    """The public schema (bounds and categories fixed in advance, not read from the rows)."""
    def integer(name, low, high):
        return {"name": name, "type": "integer", "min": low, "max": high}

    return {
        "name": NAME, "target": "late", "task": "classification",
        "source": "benchmarks/dependent_table.py (seeded synthetic generator, public)",
        "columns": [
            {"name": "month", "type": "ordinal", "categories": list(range(1, 13))},
            {"name": "day_of_week", "type": "ordinal", "categories": list(range(1, 8))},
            {"name": "carrier", "type": "categorical", "categories": [f"C{i}" for i in range(10)]},
            {"name": "origin", "type": "categorical", "categories": [f"A{i:02d}" for i in range(30)]},
            {"name": "dest", "type": "categorical", "categories": [f"A{i:02d}" for i in range(30)]},
            integer("sched_dep", 0, 2359), integer("dep_time", 0, 2359), integer("dep_hour", 0, 23),
            integer("dep_delay", -30, 600), integer("arr_delay", -60, 700),
            {"name": "distance", "type": "continuous", "min": 50, "max": 5000},
            {"name": "air_time", "type": "continuous", "min": 10, "max": 700},
            integer("taxi_out", 1, 120), integer("taxi_in", 1, 90), integer("taxi_total", 2, 210),
            {"name": "late", "type": "categorical", "categories": ["no", "yes"]},
        ],
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True, help="folder for NAME.csv and NAME.schema.json")
    parser.add_argument("--rows", type=int, default=336_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    generate(args.rows, args.seed).to_csv(out / f"{NAME}.csv", index=False)
    (out / f"{NAME}.schema.json").write_text(json.dumps(schema(), indent=2) + "\n", encoding="utf-8")
    print(out / f"{NAME}.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())
