"""In-process fits on the shared harness's split, scored by the harness: the set-up of benchmarks
that compare two ways of drawing rows from one fitted model (``stratified_sampling.py``,
``fpt_refinement.py``) or screen engine options (``fpt_screen.py``). Fits use real OpenDP noise
through the pandas oracle (no Spark); the split
is the harness's own (``prepare_split``, cached), and rows are coded as the harness codes them.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness_runs import ROOT, SHARED  # noqa: E402

sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(SHARED / "bench"))
import harness  # noqa: E402


@dataclass
class Split:
    """One shared dataset: the harness's schema and coded train/test split, spark-synth's schema and
    the train split as text (what the oracle reads)."""

    dataset: str
    bench_schema: harness.Schema
    real: harness.RealData
    schema: object
    frame: pd.DataFrame


def load_split(dataset: str) -> Split:
    from spark_synth import load_schema

    stem = Path(dataset) if "/" in dataset else SHARED / "data" / dataset  # a shared dataset's name, or DIR/NAME
    schema_path = Path(f"{stem}.schema.json")
    bench_schema = harness.Schema(schema_path)
    real = harness.RealData(f"{stem}.csv", bench_schema)
    frame = pd.read_csv(real.meta["train_csv"], dtype=str, keep_default_na=False, na_values=[""])
    return Split(dataset, bench_schema, real, load_schema(str(schema_path)), frame)


def private_oracle(split: Split, epsilon: float = 1.0, copies: int = 1):
    """The in-process oracle over the train split at ``epsilon``, δ = 1e-9 (real OpenDP noise); with
    ``copies`` > 1, over a table of that many copies of the split (every exact answer times ``copies``:
    the split's distribution at ``copies`` × its rows, without materialising them)."""
    from spark_synth.measure import answer_frame
    from spark_synth.oracle import build_oracle
    from spark_synth.privacy import PrivacyBudget, PrivacyFilter
    from spark_synth.schema import OutOfDomainPolicy

    def answer(queries):
        return [copies * a for a in answer_frame(split.frame, split.schema, queries, OutOfDomainPolicy("clip"))]

    return build_oracle(split.schema, PrivacyFilter(PrivacyBudget(epsilon, 1e-9)), answer)


def fit(engine: str, split: Split, epsilon: float = 1.0, copies: int = 1, **options):
    """``engine`` fitted on the train split (``copies`` of it) at ``epsilon``, δ = 1e-9 (real noise, tasks in-process)."""
    from spark_synth.engines import LocalTaskRunner, get_engine

    return get_engine(engine, **options).fit(split.schema, private_oracle(split, epsilon, copies), LocalTaskRunner())


def coded_rows(codes: np.ndarray, split: Split, rng: np.random.Generator) -> harness.Coded:
    """Model codes decoded to values (as a run writes them), then coded as the harness codes a table."""
    from spark_synth.schema import decode_codes

    synthetic = decode_codes(codes, split.schema, rng)
    return harness.code_table(synthetic.astype(object).where(synthetic.notna(), None), split.bench_schema)
