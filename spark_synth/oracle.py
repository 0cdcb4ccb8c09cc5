"""The pipeline's measurement oracle: exact answers from ``measure/``, noise and accounting from ``privacy/``.

:func:`build_oracle` wraps an *answer source* (a function from a batch of queries to their exact
integer answers, computed in one scan — :func:`spark_synth.measure.answer_queries` on a Spark
DataFrame, or :func:`~spark_synth.measure.answer_frame` on pandas) and a
:class:`~spark_synth.privacy.PrivacyFilter` into the
:class:`~spark_synth.engines.base.MeasurementOracle` engines see. Exact answers are cached in
this module's closures only: the oracle object has no attributes, so nothing an engine can reach
through its interface holds them; they are never returned or logged.
"""

from __future__ import annotations

import dataclasses
import math
import time
from typing import Callable, Sequence

import numpy as np

from .engines.base import SCORE_KINDS, MeasurementOracle
from .errors import InternalError, ParameterError
from .logs import layer
from .privacy import NoisyMeasurement, PrivacyFilter, release_query, select_index
from .queries import MarginalQuery, MomentQuery, Query
from .schema import Schema

AnswerSource = Callable[[list], list]
_log = layer("measure")


#: (n_rows, seed) → at most n_rows real rows as codes: the non-DP row access of explicit opt-ins.
RowSampler = Callable[[int, int], np.ndarray]


def build_oracle(schema: Schema, privacy_filter: PrivacyFilter, answer: AnswerSource,
                 timings: dict | None = None, rows: RowSampler | None = None) -> MeasurementOracle:
    """An oracle over ``answer`` charged to ``privacy_filter``; ``timings`` (optional) accumulates
    seconds spent in ``measure`` (scans), ``noise``, the number of ``scans`` and each scan's seconds
    (``scan_seconds``); ``rows`` (optional)
    serves :meth:`~MeasurementOracle.rows_not_covered_by_dp`, recorded in the report."""
    cache: dict = {}
    by_columns: dict = {}  # the cached marginals of each column tuple (what _derived may sum from)
    clock = timings if timings is not None else {}

    def exact_answers(queries: Sequence[Query]) -> list[np.ndarray]:
        for q in dict.fromkeys(queries):
            if q not in cache and (derived := _derived(q)) is not None:
                cache[q] = derived
                by_columns.setdefault(q.columns, []).append(q)
        missing = [q for q in dict.fromkeys(queries) if q not in cache]
        if missing:
            clock["scans"] = clock.get("scans", 0) + 1
            _log.info("measure: pass %d over the table (%d queries)", clock["scans"], len(missing))  # as it starts
            started = time.perf_counter()
            answers = answer(missing)
            elapsed = time.perf_counter() - started
            clock["measure"] = clock.get("measure", 0.0) + elapsed
            clock.setdefault("scan_seconds", []).append(elapsed)
            if len(answers) != len(missing):
                raise InternalError("the answer source returned the wrong number of answers")
            for q, a in zip(missing, answers):
                cache[q] = a
                if isinstance(q, MarginalQuery):
                    by_columns.setdefault(q.columns, []).append(q)
        return [cache[q] for q in queries]

    def _derived(query: Query):
        """A coarser marginal summed from a cached finer one: no scan (groupings chosen after the
        first releases, e.g. domain compression, still cost one pass)."""
        if isinstance(query, MarginalQuery):
            for cached in by_columns.get(query.columns, ()):
                derived = query.coarsen(cached, cache[cached], schema)
                if derived is not None:
                    return derived
        return None

    return _oracle_over(schema, privacy_filter, exact_answers, clock, rows)


def _oracle_over(schema: Schema, privacy_filter: PrivacyFilter, exact_answers, clock: dict, rows: RowSampler | None,
                 scope: tuple[str, ...] | None = None) -> MeasurementOracle:
    """The oracle interface; ``scope`` (a child's columns, e.g. a DGM partition's) limits the
    queries to those columns, and moment queries then embed those columns only."""
    view = schema if scope is None else Schema(tuple(schema[c] for c in scope), name=schema.name)
    scoped: dict = {}  # each moment query's scoped copy, made once (queries are cached by identity)

    def check_queries(queries, what: str) -> list[Query]:
        queries = list(queries)
        for q in queries:
            if not isinstance(q, Query):
                raise InternalError(f"{what} got {type(q).__name__}, not a Query")
            q.answer_shape(view)  # unknown columns etc. fail here, before anything is spent
        return [scoped_query(q) for q in queries]

    def scoped_query(query: Query) -> Query:
        if scope is None or not isinstance(query, MomentQuery) or query.columns is not None:
            return query
        if query not in scoped:
            scoped[query] = dataclasses.replace(query, columns=tuple(view.names))
        return scoped[query]

    class Oracle(MeasurementOracle):
        __slots__ = ()

        @property
        def rho_total(self) -> float:
            return privacy_filter.rho_total

        @property
        def rho_remaining(self) -> float:
            return privacy_filter.rho_remaining

        @property
        def rows_per_unit(self) -> int:
            return privacy_filter.unit.max_rows

        def measure(self, query: Query, rho: float) -> NoisyMeasurement:
            (out,) = self.measure_many([(query, rho)])
            return out

        def measure_many(self, requests: Sequence[tuple[Query, float]]) -> list[NoisyMeasurement]:
            requests = list(requests)
            queries = check_queries([q for q, _ in requests], "measure")
            labels = [f"measurement {q.name!r}" for q in queries]
            # the batch's one budget check, before its one scan; each release charges its own grant
            grants = privacy_filter.grant_all([(r, label) for (_, r), label in zip(requests, labels)],
                                              labels[0] if len(labels) == 1 else f"{len(labels)} measurements")
            try:
                answers = exact_answers(queries)
                started = time.perf_counter()
                out = [release_query(privacy_filter, q, a, g) for q, a, g in zip(queries, answers, grants)]
                clock["noise"] = clock.get("noise", 0.0) + time.perf_counter() - started
            finally:
                privacy_filter.return_unused(grants)  # none, unless the scan or a release failed
            return out

        def prepare(self, queries: Sequence[Query]) -> None:
            exact_answers(check_queries(queries, "prepare"))

        def select(self, candidates, score_kind, model_answers, rho, *, weights=None, offsets=None) -> Query:
            candidates = check_queries(candidates, "select")
            if not candidates:
                raise ParameterError("candidates", "at least one query to select from", [])
            if score_kind not in SCORE_KINDS:
                raise ParameterError("score_kind", f"one of {list(SCORE_KINDS)}", score_kind)
            n = len(candidates)
            weights = _public_vector(weights, n, "weights", default=1.0, nonnegative=True)
            offsets = _public_vector(offsets, n, "offsets", default=0.0)
            if len(model_answers) != n:
                raise ParameterError("model_answers", f"one array per candidate ({n})", len(model_answers))
            model = []
            for q, m in zip(candidates, model_answers):
                m = np.asarray(m, dtype=np.float64)
                if m.shape != tuple(q.answer_shape(schema)) or not np.all(np.isfinite(m)):
                    raise ParameterError(f"model answer for {q.name!r}", f"finite values of shape {q.answer_shape(schema)}", m.shape)
                model.append(m)
            norm = 1 if score_kind == "weighted_l1" else 2
            sensitivity = max(w * (q.l1_sensitivity if norm == 1 else q.l2_sensitivity) for w, q in zip(weights, candidates))
            if not sensitivity > 0:
                raise ParameterError("weights", "at least one weight > 0", list(weights))
            grant = privacy_filter.grant(rho, f"selection among {n} candidates")  # the one check, before the scores
            try:
                exact = exact_answers(candidates)
                scores = np.array([w * np.linalg.norm((a / q.unit - m).ravel(), ord=norm) - o
                                   for q, a, m, w, o in zip(candidates, exact, model, weights, offsets)])
                index = select_index(privacy_filter, scores, sensitivity, grant, name=f"select[{score_kind}]",
                                     description=f"{score_kind} error of {n} candidates: "
                                     + ", ".join(q.name for q in candidates[:5]) + (", ..." if n > 5 else ""))
            finally:
                privacy_filter.return_unused([grant])
            return candidates[index]

        def child(self, rho: float, label: str, columns: Sequence[str] | None = None) -> MeasurementOracle:
            if columns is not None:
                columns = tuple(columns)
                unknown = [c for c in columns if c not in view.names]
                if unknown or not columns or len(set(columns)) != len(columns):
                    raise ParameterError(f"columns of child oracle {label!r}", f"distinct columns among {list(view.names)}",
                                         list(columns))
                columns = tuple(c for c in view.names if c in columns)  # schema order
            return _oracle_over(schema, privacy_filter.child(rho, label), exact_answers, clock, rows,
                                scope if columns is None else columns)

        def rows_not_covered_by_dp(self, n_rows: int, seed: int, purpose: str) -> np.ndarray:
            if rows is None:
                raise NotImplementedError("this oracle gives no access to rows")
            if isinstance(n_rows, bool) or not isinstance(n_rows, int) or n_rows < 1:
                raise ParameterError("n_rows", "a whole number >= 1", n_rows)
            privacy_filter.record_not_covered(purpose, f"uniform sample of at most {n_rows} real rows (seed {seed})")
            return rows(n_rows, seed)

        def __repr__(self) -> str:
            return f"MeasurementOracle(rho_total={self.rho_total!r}, rho_remaining={self.rho_remaining!r})"

    return Oracle()


def _public_vector(values, n: int, name: str, default: float, nonnegative: bool = False) -> list[float]:
    if values is None:
        return [default] * n
    values = [float(v) for v in values]
    if len(values) != n or not all(math.isfinite(v) and (v >= 0 or not nonnegative) for v in values):
        raise ParameterError(name, f"{n} finite numbers" + (" >= 0" if nonnegative else ""), values)
    return values


def oracle_over_frame(frame, schema: Schema, privacy_filter: PrivacyFilter, policy="clip",
                      timings: dict | None = None) -> MeasurementOracle:
    """The same oracle over a pandas DataFrame (single-machine use, tests, benchmarks): exact
    answers by :func:`~spark_synth.measure.answer_frame`, noise and accounting as on Spark."""
    from .measure import answer_frame
    from .measure.rows import sample_codes_frame
    from .schema import OutOfDomainPolicy

    return build_oracle(schema, privacy_filter, lambda queries: answer_frame(frame, schema, queries, OutOfDomainPolicy(policy)), timings,
                        rows=lambda n, seed: sample_codes_frame(frame, schema, n, seed, OutOfDomainPolicy(policy)))
