"""The one place that wires the layers: SELECT → MEASURE → NOISE → FIT → GENERATE → WRITE → TRACK.

:class:`Synthesizer` is the public API (``fit`` on a Spark DataFrame, ``sample`` rows, ``save`` /
``load``); :func:`run` is what the CLI's ``run`` does.
"""

from __future__ import annotations

import json
import secrets
import time
from contextlib import contextmanager
from pathlib import Path

from . import __version__
from .config import RunConfig, check_policy, check_rows, check_seed
from .engines import Engine, get_engine, model_class
from .errors import InternalError, NotFittedError, ParameterError, UserInputError
from .measure import check_structure, count_marginals, measure_moment_sums
from .privacy import Accountant, PrivacyBudget, release_counts, release_fixed_point_sums
from .queries import MarginalQuery, MomentQuery, measurement_rounds
from .schema import Schema, load_schema, schema_from_dict

MODEL_FILE = "synthesizer.json"
FORMAT_VERSION = 1


class Synthesizer:
    """A DP synthesizer: ``fit`` measures a Spark DataFrame once (spending the budget), after which
    ``sample`` generates any number of rows for free (post-processing).

    >>> synth = Synthesizer("independent", epsilon=1.0, delta=1e-9).fit(df, schema)
    >>> synthetic = synth.sample(10_000, seed=7)
    """

    def __init__(self, engine: str = "independent", *, epsilon: float, delta: float,
                 out_of_domain: str = "clip", engine_options: dict | None = None):
        self.engine = engine
        self.epsilon = epsilon
        self.delta = delta
        self.out_of_domain = out_of_domain
        self.engine_options = dict(engine_options or {})
        self._budget = PrivacyBudget(epsilon, delta)
        self._policy = check_policy(out_of_domain)
        self._engine: Engine = get_engine(engine, **self.engine_options)

    # ---- fit -----------------------------------------------------------------------------
    def fit(self, df, schema: Schema | str | Path) -> "Synthesizer":
        """Measure ``df`` (a Spark DataFrame) with DP and fit the engine's model. Returns self."""
        schema = schema if isinstance(schema, Schema) else load_schema(schema)
        timings: dict[str, float] = {}
        started = time.perf_counter()
        check_structure(df, schema)
        queries = self._engine.plan(schema)
        accountant = Accountant(self._budget)
        for query in queries:
            accountant.request(query.name, query.weight)
        accountant.allocate()
        first, adaptive = measurement_rounds(queries)
        exact = _measure_exact(df, schema, first, self._policy)
        timings["measure"] = time.perf_counter() - started

        started = time.perf_counter()
        measurements = [_release(accountant, q, values) for q, values in zip(first, exact)]
        timings["noise"] = time.perf_counter() - started
        for query in adaptive:  # completed from the releases above
            completed = self._engine.adapt(schema, query, list(measurements))
            if completed.name != query.name or completed.weight != query.weight or completed.adaptive:
                raise InternalError(f"engine {self._engine.name!r} changed adaptive query {query.name!r} beyond its encoding")
            started = time.perf_counter()
            (values,) = _measure_exact(df, schema, [completed], self._policy)
            timings["measure"] += time.perf_counter() - started
            started = time.perf_counter()
            measurements.append(_release(accountant, completed, values))
            timings["noise"] += time.perf_counter() - started

        started = time.perf_counter()
        self.model_ = self._engine.fit(schema, measurements)
        timings["fit"] = time.perf_counter() - started
        self.schema_ = schema
        self.privacy_report_ = accountant.report()
        self.timings_ = timings
        return self

    # ---- sample --------------------------------------------------------------------------
    def sample(self, n_rows: int, seed: int | None = None, spark=None, partitions: int | None = None):
        """A Spark DataFrame of ``n_rows`` synthetic rows (costs no privacy budget)."""
        from .sample import generate_rows

        self._check_fitted()
        check_rows(n_rows)
        check_seed(seed)
        if spark is None:
            from .session import get_spark

            spark = get_spark()
        self.last_seed_ = secrets.randbits(63) if seed is None else int(seed)
        return generate_rows(spark, self.model_, self.schema_, n_rows, self.last_seed_, partitions)

    # ---- persistence ---------------------------------------------------------------------
    def to_dict(self) -> dict:
        """Everything needed to sample again: DP post-processed state only, no rows."""
        self._check_fitted()
        return {
            "format_version": FORMAT_VERSION,
            "spark_synth_version": __version__,
            "engine": self.engine,
            "engine_options": self.engine_options,
            "epsilon": self.epsilon,
            "delta": self.delta,
            "out_of_domain": self.out_of_domain,
            "schema": self.schema_.to_dict(),
            "model": self.model_.to_state(),
            "privacy": self.privacy_report_,
        }

    def save(self, path: str | Path) -> Path:
        """Write the fitted synthesizer to directory ``path`` (refuses to overwrite)."""
        path = Path(path)
        if (path / MODEL_FILE).exists():
            raise ParameterError("model path", "a directory without a saved synthesizer", str(path))
        path.mkdir(parents=True, exist_ok=True)
        staging = path / f".{MODEL_FILE}.tmp"
        staging.write_text(json.dumps(self.to_dict()), encoding="utf-8")
        staging.replace(path / MODEL_FILE)
        return path

    @classmethod
    def load(cls, path: str | Path) -> "Synthesizer":
        file = Path(path) / MODEL_FILE
        if not file.is_file():
            raise UserInputError(f"no saved synthesizer at '{path}' (expected {MODEL_FILE}); run `spark-synth fit` first")
        state = json.loads(file.read_text(encoding="utf-8"))
        if state.get("format_version") != FORMAT_VERSION:
            raise UserInputError(f"'{file}' has format version {state.get('format_version')}; expected {FORMAT_VERSION}")
        synth = cls(state["engine"], epsilon=state["epsilon"], delta=state["delta"],
                    out_of_domain=state["out_of_domain"], engine_options=state["engine_options"])
        synth.schema_ = schema_from_dict(state["schema"])
        synth.model_ = model_class(state["engine"]).from_state(state["model"], synth.schema_)
        synth.privacy_report_ = state["privacy"]
        synth.timings_ = {}
        return synth

    def _check_fitted(self) -> None:
        if not hasattr(self, "model_"):
            raise NotFittedError("this Synthesizer is not fitted yet: call fit(df, schema) first")


def _measure_exact(df, schema: Schema, queries, policy) -> list:
    """Exact answers to the plan's queries: all marginals in one Spark pass, each moment query in one."""
    marginals = [q for q in queries if isinstance(q, MarginalQuery)]
    counts = dict(zip((q.name for q in marginals), count_marginals(df, schema, [q.columns for q in marginals], policy))) if marginals else {}
    exact = []
    for query in queries:
        if isinstance(query, MarginalQuery):
            exact.append(counts[query.name])
        elif isinstance(query, MomentQuery):
            exact.append(measure_moment_sums(df, schema, query, policy))
        else:
            raise InternalError(f"no measurement for query type {type(query).__name__}")
    return exact


def _release(accountant: Accountant, query, values):
    """Add the privacy noise (once) to one exact answer."""
    if isinstance(query, MarginalQuery):
        return release_counts(accountant, query.name, query.columns, values)
    description = f"sliced Chebyshev moment sums ({query.n_directions} directions x degrees 1..{query.degree}, fixed point)"
    return release_fixed_point_sums(accountant, query.name, description, values, query.fraction_bits, query.l2_sensitivity)


def run(config: RunConfig, spark=None, evaluate: dict | None = None) -> dict:
    """Read → fit → sample → write (→ MLflow). Returns the one-line summary as a dict.

    ``evaluate`` (options ``out``, ``target``, ``holdout_fraction``, ``seed``; ``{}`` for defaults) splits
    the input deterministically, fits on the train part only, and evaluates the written output against
    the train and hold-out parts (NOT private: see :mod:`spark_synth.evaluate`).
    """
    from .io import check_output, write_output
    from .session import get_spark

    started = time.perf_counter()
    schema = load_schema(config.schema)
    if evaluate is not None:
        from .evaluate.command import check_request

        evaluate = check_request(evaluate, schema, config.output, config.overwrite)
    spark = spark or get_spark(config.spark_profile)
    location = check_output(spark, config.output, config.overwrite)
    synth = Synthesizer(config.engine, epsilon=config.epsilon, delta=config.delta, out_of_domain=config.out_of_domain,
                        engine_options=config.engine_options)
    with _tracking(config.mlflow, f"run-{config.engine}") as tracker:
        if evaluate is None:
            _fit_from_input(synth, spark, config.input, schema, tracker, _run_params(config, synth, schema))
        else:  # fair protocol: the synthesizer only ever sees the train part
            from .evaluate import train_holdout_split
            from .io import read_input

            train, holdout = train_holdout_split(read_input(spark, config.input), evaluate["holdout_fraction"], evaluate["seed"])
            synth.fit(train, schema)
            tracker.log_fit({**_run_params(config, synth, schema), "fit_on": "train part (evaluate)"}, synth.privacy_report_, synth.timings_)
        tracker.log_model(synth, config.input)  # the pyfunc model `spark-synth release` registers
        write_started = time.perf_counter()
        written = write_output(spark, synth.sample(config.rows, seed=config.seed, spark=spark), location, config.overwrite)
        timings = {"sample_and_write": time.perf_counter() - write_started, "total": time.perf_counter() - started}
        tracker.log_output(written, config.rows, synth.last_seed_, timings)
        evaluation = None
        if evaluate is not None:
            from .evaluate.command import evaluate_after_run

            evaluation = evaluate_after_run(spark, written, train, holdout, schema, synth.privacy_report_, evaluate,
                                            log_to_mlflow=tracker.run_id is not None)
    report = synth.privacy_report_
    extra = {"evaluation": evaluation} if evaluation is not None else {}
    return {
        "engine": config.engine,
        "epsilon": config.epsilon,
        "delta": config.delta,
        "epsilon_spent": report["epsilon_spent"],
        "rho_spent": report["rho_spent"],
        "rows": config.rows,
        "output": written,
        "seed": synth.last_seed_,
        "seconds": round(timings["total"], 3),
        "timings": {k: round(v, 3) for k, v in {**synth.timings_, **timings}.items()},
        "mlflow_run_id": tracker.run_id,
        **extra,
    }


def fit_and_save(*, input: str, schema: str, engine: str, epsilon: float, delta: float, model: str,
                 out_of_domain: str = "clip", mlflow: bool = True, spark_profile: str = "local", spark=None,
                 engine_options: dict | None = None) -> dict:
    """Fit on ``input`` and save the synthesizer to directory ``model`` (the CLI's ``fit``)."""
    from .session import get_spark

    started = time.perf_counter()
    if (Path(model) / MODEL_FILE).exists():
        raise ParameterError("model", "a directory without a saved synthesizer (choose a new path)", model)
    parsed = load_schema(schema)
    synth = Synthesizer(engine, epsilon=epsilon, delta=delta, out_of_domain=out_of_domain, engine_options=engine_options)
    spark = spark or get_spark(spark_profile)
    params = {**_fit_params(synth, input, schema, parsed), "model": model}
    with _tracking(mlflow, f"fit-{engine}") as tracker:
        _fit_from_input(synth, spark, input, parsed, tracker, params)
        saved = synth.save(model)
        tracker.log_model_dir(saved)
        tracker.log_model(synth, input)  # the pyfunc model `spark-synth release` registers
    report = synth.privacy_report_
    return {"engine": engine, "epsilon": epsilon, "delta": delta, "epsilon_spent": report["epsilon_spent"],
            "rho_spent": report["rho_spent"], "model": str(saved.resolve()),
            "seconds": round(time.perf_counter() - started, 3), "mlflow_run_id": tracker.run_id}


def load_and_sample(*, model: str, rows: int, output: str, seed: int | None = None, overwrite: bool = False,
                    spark_profile: str = "local", spark=None) -> dict:
    """Load a saved synthesizer and write ``rows`` rows (the CLI's ``sample``; spends no budget)."""
    from .io import check_output, write_output
    from .session import get_spark

    started = time.perf_counter()
    check_rows(rows)
    check_seed(seed)
    synth = Synthesizer.load(model)
    spark = spark or get_spark(spark_profile)
    location = check_output(spark, output, overwrite)
    written = write_output(spark, synth.sample(rows, seed=seed, spark=spark), location, overwrite)
    return {"engine": synth.engine, "rows": rows, "output": written, "seed": synth.last_seed_,
            "epsilon_spent": 0.0, "seconds": round(time.perf_counter() - started, 3)}


def _fit_from_input(synth: Synthesizer, spark, source: str, schema: Schema, tracker: "_Tracker", params: dict) -> None:
    from .io import read_input

    synth.fit(read_input(spark, source), schema)
    tracker.log_fit(params, synth.privacy_report_, synth.timings_)


class _Tracker:
    """MLflow logging when enabled; does nothing when the user passed ``--no-mlflow``."""

    def __init__(self, run=None):
        self.run_id = run.info.run_id if run is not None else None

    def log_fit(self, params: dict, report: dict, timings: dict) -> None:
        if self.run_id:
            from .track import log_fit

            log_fit(params, report, timings)

    def log_output(self, location: str, rows: int, seed: int, timings: dict) -> None:
        if self.run_id:
            from .track import log_output

            log_output(location, rows, seed, timings)

    def log_model_dir(self, path: Path) -> None:
        if self.run_id:
            import mlflow

            mlflow.log_artifacts(str(path), artifact_path="synthesizer")

    def log_model(self, synth: Synthesizer, source: str) -> None:
        if self.run_id:
            from .track.pyfunc import log_synthesizer_model

            log_synthesizer_model(synth, source=source)


@contextmanager
def _tracking(enabled: bool, run_name: str):
    if not enabled:
        yield _Tracker()
        return
    from .session import spark_synth_home
    from .track import tracked_run

    with tracked_run(spark_synth_home(), run_name=run_name) as active:
        yield _Tracker(active)


def _fit_params(synth: Synthesizer, source: str, schema_path: str, schema: Schema) -> dict:
    """MLflow parameters of a fit (shared by ``run`` and ``fit``)."""
    return {
        "engine": synth.engine,
        "epsilon": synth.epsilon,
        "delta": synth.delta,
        "input": source,
        "schema": schema_path,
        "out_of_domain": synth.out_of_domain,
        "n_columns": len(schema),
        "engine_config": json.dumps(synth._engine.config(), sort_keys=True),
        "spark_synth_version": __version__,
    }


def _run_params(config: RunConfig, synth: Synthesizer, schema: Schema) -> dict:
    return {**_fit_params(synth, config.input, config.schema, schema),
            "rows": config.rows, "seed": config.seed, "output": config.output}
