"""A fitted synthesizer as an MLflow ``pyfunc`` model.

The model holds the saved synthesizer state only (``synthesizer.json``: the public schema, the
engine's DP post-processed parameters and the privacy report) — never rows. Its MLmodel metadata
carries the privacy guarantee (ε, δ, ρ, the neighbouring relation, what is and is not covered),
the schema and the engine configuration; its signature is ``rows`` (long) and optional ``seed``
(long) in, the synthetic table's columns out.

Two ways to sample, both post-processing (they spend no privacy budget):

* ``mlflow.pyfunc.load_model(uri).predict({"rows": 1000, "seed": 7})`` — a pandas DataFrame,
  generated in the calling process without Spark (serving, small batches);
* :func:`sample_model` (or ``load_model(uri).unwrap_python_model().sample_spark(...)``) — a Spark
  DataFrame generated on the executors, for any number of rows. This is the batch path: it does
  not go through ``mlflow.pyfunc.spark_udf`` (whose one-output-row-per-input-row contract does
  not fit a generator).
"""

from __future__ import annotations

import secrets
import tempfile
import warnings
from pathlib import Path

import mlflow.pyfunc
import numpy as np
import pandas as pd

from ..io.locations import source_key
from .mlflow_tracking import FIT_ID_TAG, MODEL_URI_TAG

#: Name of the model inside its MLflow run.
MODEL_NAME = "model"
#: Run tags written when a synthesizer model is logged (``spark-synth release`` reads them).
TAG_MODEL_URI = MODEL_URI_TAG
TAG_SOURCE = "spark_synth.source_table"
TAG_FIT_ID = FIT_ID_TAG
#: Rows generated per in-process chunk in :meth:`SynthesizerModel.predict`.
CHUNK_ROWS = 250_000

GUARANTEE_COVERS = (
    "the model's state and every row sampled from it, for any number of samples: together they are "
    "(epsilon, delta)-DP and rho-zCDP with respect to the neighbouring relation, because they are "
    "post-processing of one DP measurement of the source table"
)
GUARANTEE_EXCLUDES = (
    "the schema (column names, categories, bounds, bins) is public input supplied by the user; the "
    "fit's refusals (empty table; an out-of-domain column named under out_of_domain=error) reveal one bit each; "
    "stage timings (logged and printed; they grow with the row count) and evaluation metrics (read real rows; "
    "logged in their own run) are not private"
)
#: The MLflow "models from code" file logged with every model: MLflow runs it on load. It only
#: imports spark-synth's model class; the state is the model's ``synthesizer`` artifact.
_MODEL_CODE = """\
import mlflow

from spark_synth.track.pyfunc import SynthesizerModel

mlflow.models.set_model(SynthesizerModel())
"""


class SynthesizerModel(mlflow.pyfunc.PythonModel):
    """The pyfunc python model: loads ``synthesizer.json`` and samples from it."""

    synthesizer = None

    def load_context(self, context) -> None:
        from ..pipeline import Synthesizer

        self.synthesizer = Synthesizer.load(context.artifacts["synthesizer"])

    def predict(self, context, model_input: pd.DataFrame, params=None) -> pd.DataFrame:
        """Synthetic rows for each request row ``(rows, seed, conditions, rows_per)`` of ``model_input``
        (the last three optional: ``conditions`` a ``--where`` condition text, ``rows_per`` a
        categorical column, docs/sampling.md), concatenated."""
        from ..config import check_rows, check_seed

        requests = _requests(model_input)
        frames = []
        for rows, seed, conditions, rows_per in requests:
            check_rows(rows)
            check_seed(seed)
            frames.append(self.sample_pandas(rows, seed, conditions=conditions, rows_per=rows_per))
        return frames[0] if len(frames) == 1 else pd.concat(frames, ignore_index=True)

    def sample_pandas(self, rows: int, seed: int | None = None, *, conditions=None, rows_per: str | None = None) -> pd.DataFrame:
        """``rows`` synthetic rows as pandas, in this process (no Spark; spends no budget); ``conditions``
        and ``rows_per`` as :meth:`Synthesizer.sample <spark_synth.Synthesizer.sample>`."""
        from ..sample.conditions import as_condition
        from ..sample.plan import sampling_plan

        synth = self.synthesizer
        plan = sampling_plan(synth.model_, synth.schema_, rows, as_condition(conditions, synth.schema_), rows_per)
        root = secrets.randbits(63) if seed is None else int(seed)
        chunks, strata_models = [], {}
        for index, start in enumerate(range(0, rows, CHUNK_ROWS)):
            rng = np.random.default_rng(np.random.SeedSequence([root, index]))
            ids = np.arange(start, min(start + CHUNK_ROWS, rows))
            chunks.append(plan.frame(ids, synth.schema_, rng, False, strata_models)[0])
        return chunks[0] if len(chunks) == 1 else pd.concat(chunks, ignore_index=True)

    def sample_spark(self, rows: int, seed: int | None = None, spark=None, partitions: int | None = None, *,
                     conditions=None, rows_per: str | None = None):
        """A Spark DataFrame of ``rows`` rows generated on the executors (spends no budget)."""
        return self.synthesizer.sample(rows, seed=seed, spark=spark, partitions=partitions, conditions=conditions,
                                       rows_per=rows_per)


def _requests(model_input) -> list[tuple[int, int | None, str | None, str | None]]:
    from ..errors import ParameterError

    if isinstance(model_input, dict):
        model_input = pd.DataFrame([model_input])
    if not isinstance(model_input, pd.DataFrame) or "rows" not in model_input.columns or model_input.empty:
        raise ParameterError("model input", "a DataFrame or dict with a 'rows' column (and optionally 'seed', "
                                            "'conditions', 'rows_per')", model_input)
    out = []
    for record in model_input.to_dict("records"):
        rows, seed, conditions, rows_per = (_given(record.get(k)) for k in ("rows", "seed", "conditions", "rows_per"))
        out.append((_as_int(rows), _as_int(seed) if seed is not None else None, conditions, rows_per))
    return out


def _given(value):
    """None for an absent cell (None, NaN, NA, or an empty text), else the value."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    return None if not isinstance(value, str) and pd.isna(value) else value


def _as_int(value):
    if isinstance(value, (np.integer,)):
        return int(value)
    if isinstance(value, (float, np.floating)) and float(value).is_integer():
        return int(value)
    return value


# ---- what the model says about itself ---------------------------------------------------------
def column_type(column) -> str:
    """The MLflow type of a synthetic column (as written to Spark: string, long, double, boolean or datetime)."""
    special = {"boolean": "boolean", "date": "datetime", "timestamp": "datetime", "timestamp_ntz": "datetime"}
    if column.type.value in special:
        return special[column.type.value]
    if column.type.is_discrete:
        return {"string": "string", "integer": "long", "float": "double"}[column.category_kind]
    return "long" if column.type.value == "integer" else "double"


def model_signature(schema):
    """Input ``rows`` (long, required), ``seed`` (long), ``conditions`` and ``rows_per`` (strings; optional);
    output: the schema's columns."""
    from mlflow.models import ModelSignature
    from mlflow.types import ColSpec
    from mlflow.types import Schema as MlflowSchema

    inputs = MlflowSchema([ColSpec("long", "rows"), ColSpec("long", "seed", required=False),
                           ColSpec("string", "conditions", required=False), ColSpec("string", "rows_per", required=False)])
    outputs = MlflowSchema([ColSpec(column_type(c), c.name) for c in schema])
    return ModelSignature(inputs=inputs, outputs=outputs)


def privacy_metadata(report: PrivacyReport) -> dict:
    """The model's privacy statement, from a fit's computation report."""
    return {
        "fit_id": report.fit_id,
        "epsilon": report.epsilon_spent,
        "delta": report.delta,
        "rho": report.rho_spent,
        "epsilon_requested": report.epsilon_requested,
        "rho_requested": report.rho_requested,
        "neighbouring_relation": report.neighbouring_relation,
        "accounting": "rho-zCDP composed by adding rho; (epsilon, delta) by " + report.conversion,
        "n_measurements": len(report.measurements),
        "n_selections": len(report.selections),
        "covers": GUARANTEE_COVERS,
        "not_covered": GUARANTEE_EXCLUDES + "".join(f"; {e.name} (an opt-in: this fit is NOT covered)" for e in report.not_covered),
        "dp_guarantee": report.dp_guarantee,
        "holds_only_dp_state": True,
        "sampling_spends_budget": False,
        "sampling_note": "the model holds only DP post-processed state: predict / sampling is post-processing and spends no privacy budget",
    }


def model_metadata(synth, source: str | None = None) -> dict:
    """MLmodel metadata: privacy, schema, engine configuration, provenance."""
    from dataclasses import asdict

    from .._version import __version__

    return {
        "spark_synth": {
            "version": __version__,
            "engine": synth.engine,
            "engine_config": asdict(synth.engine_config),
            "out_of_domain": synth.out_of_domain,
            "source_table": source,
            "privacy": privacy_metadata(synth.privacy_report_),
            "schema": synth.schema_.to_dict(),
        }
    }


def log_synthesizer_model(synth, *, source: str | None = None, name: str = MODEL_NAME):
    """Log fitted ``synth`` as a pyfunc model in the active MLflow run; returns its ``ModelInfo``.

    Also tags the run with the model URI, the fit id and the source table, and logs
    ``privacy_report.json`` when the run does not have it yet — what ``spark-synth release`` needs.
    A run holds one fit: logging a different fit into it is a :class:`~spark_synth.errors.UserInputError`.
    """
    import mlflow

    from .._version import __version__
    from .mlflow_tracking import check_one_fit_per_run, dp_tags

    synth._check_fitted()
    run = mlflow.active_run()
    if run is None:
        from ..errors import UserInputError

        raise UserInputError("no active MLflow run: call log_synthesizer inside `with spark_synth.track.mlflow_run():`")
    check_one_fit_per_run(synth.privacy_report_.fit_id)
    with tempfile.TemporaryDirectory(prefix="spark-synth-model-") as tmp:
        saved = synth.save(Path(tmp) / "synthesizer")
        code = Path(tmp) / "spark_synth_model.py"  # written out: the package may be a zipped wheel
        code.write_text(_MODEL_CODE, encoding="utf-8")
        with warnings.catch_warnings():  # no input example / type hints: the signature says it all
            warnings.simplefilter("ignore")
            info = mlflow.pyfunc.log_model(
                **logged_model_name(name),
                python_model=str(code),
                artifacts={"synthesizer": str(saved)},
                signature=model_signature(synth.schema_),
                pip_requirements=[f"spark-synth=={__version__}"],
                metadata=model_metadata(synth, source),
            )
    tags = {TAG_MODEL_URI: info.model_uri, TAG_FIT_ID: synth.privacy_report_.fit_id, "spark_synth.engine": synth.engine,
            **dp_tags(synth.privacy_report_)}
    if source:
        tags[TAG_SOURCE] = source_key(source)
    mlflow.set_tags(tags)
    artifacts = {f.path for f in mlflow.MlflowClient().list_artifacts(run.info.run_id)}
    if "privacy_report.json" not in artifacts:
        mlflow.log_dict(synth.privacy_report_.to_dict(), "privacy_report.json")
    return info


def logged_model_name(name: str) -> dict:
    """``log_model``'s keyword for the model's name in its run: ``name`` (MLflow 3's logged models)
    or ``artifact_path`` (MLflow 2.x, which has no ``name``)."""
    import mlflow

    return {"name": name} if int(mlflow.__version__.split(".")[0]) >= 3 else {"artifact_path": name}


def log_synthesizer(synth, *, source: str | None = None, params: dict | None = None):
    """Log a fitted synthesizer into the active run: parameters, privacy report, and the model.

    The Python-API counterpart of what ``spark-synth fit`` logs; use inside
    :func:`spark_synth.track.mlflow_run`, one synthesizer per run (a second, different fit is
    refused: start a new run for it). Returns the model's ``ModelInfo``.
    """
    from .mlflow_tracking import log_fit

    logged = {"engine": synth.engine, "epsilon": synth.epsilon, "delta": synth.delta,
              "out_of_domain": synth.out_of_domain, "input": source or "", **(params or {})}
    log_fit(logged, synth.privacy_report_, getattr(synth, "timings_", {}) or {}, synth.model_.loss_curves())
    return log_synthesizer_model(synth, source=source)


def load_synthesizer(model_uri: str):
    """The :class:`~spark_synth.Synthesizer` inside a logged/registered model (no rows, no budget)."""
    import mlflow

    return mlflow.pyfunc.load_model(model_uri).unwrap_python_model().synthesizer


def sample_model(model_uri: str, rows: int, seed: int | None = None, spark=None, partitions: int | None = None, *,
                 conditions=None, rows_per: str | None = None):
    """Batch path: a Spark DataFrame of ``rows`` rows from a logged or registered model.

    ``model_uri`` is e.g. ``models:/adult_synth/1`` or ``runs:/<run id>/model``. Rows are
    generated on the executors; sampling is post-processing and spends no privacy budget.
    ``conditions`` and ``rows_per``: as :meth:`Synthesizer.sample <spark_synth.Synthesizer.sample>`.
    """
    return load_synthesizer(model_uri).sample(rows, seed=seed, spark=spark, partitions=partitions,
                                              conditions=conditions, rows_per=rows_per)
