"""DGM engine: disjoint column partitions, one model each, joined by an end-to-end DP validator.

SELECT   the partitions: the user's (checked), or ``n_partitions`` groups from noisy 2-way
         associations (``association_share`` of ρ; the grouping is post-processing);
MEASURE  each partition's engine talks to a child oracle holding its share of ρ (∝ its columns;
         sequential composition — every partition sees every row), scoped to the partition's
         columns (its queries, SPLICE's moment embeddings included, see only them); the DP validator
         (``validator_share``) privately selects the cross-partition pairs the random join gets
         most wrong (exponential mechanism against the partition models' own marginals) and
         measures them;
FIT      each partition's engine fits from its own noisy answers; the validator is a log
         density-ratio score built from the noisy pair marginals (:mod:`.validator`);
GENERATE partition pieces drawn independently, joined at random and kept by the validator's score
         (:mod:`.join`), on the executors (post-processing). ``validator=real`` (an explicit opt-in)
         is the paper's random forest on real rows instead: NOT covered by the DP guarantee
         (:mod:`.forest_validator`; the report records the row access).
"""

from __future__ import annotations

import itertools
from dataclasses import fields

import numpy as np

from ...errors import ParameterError
from ...logs import layer
from ...privacy import split_rho
from ...queries import MarginalQuery
from ...schema import Schema
from ..base import Engine, MeasurementOracle, TaskRunner
from ..groupings import cells, coarse_groupings
from .config import DgmConfig
from .join import JoinSettings, assemble
from .model import DgmModel, sub_schema
from .partitions import association, checked_partitions, grouped_by_association
from .forest_validator import REAL_ROWS, ForestValidator
from .validator import PairRatioValidator

#: Numeric ranges per column in the association and validator pair marginals.
PAIR_GROUPS = 8
#: Pair marginals larger than this are not measured for the association or the validator.
MAX_PAIR_CELLS = 10_000
#: Rows drawn from each partition model to estimate its marginals (post-processing).
MARGINAL_DRAWS = 100_000
#: Share of each validator pair's ρ spent selecting it.
SELECT_SHARE = 0.1
DEFAULT_ENGINE = "fpt"

_log = layer("engines")


class DgmEngine(Engine):
    """Disjoint generative models with a DP validator join."""

    name = "dgm"
    model_class = DgmModel
    config_class = DgmConfig

    def fit(self, schema: Schema, oracle: MeasurementOracle, tasks: TaskRunner) -> DgmModel:
        o = self.options
        n_partitions = o.partition_count
        if n_partitions > len(schema):
            raise ParameterError("dgm.n_partitions", f"at most the number of columns ({len(schema)})", n_partitions)
        engines = self._partition_engines(n_partitions)  # every option checked before anything is spent
        partitions = checked_partitions(schema, o.partitions) if o.partitions is not None else None
        rho = oracle.rho_total
        groupings = coarse_groupings(schema, PAIR_GROUPS)
        if partitions is None:
            partitions = self._associated_partitions(schema, oracle.child(o.association_share * rho, "association"),
                                                     groupings, n_partitions)
        wanted_validator_rho = o.validator_share * rho if o.validator == "dp" else 0.0
        left = oracle.rho_remaining
        weights = [(left - wanted_validator_rho) * len(p) / len(schema) for p in partitions]
        # one split of what is left (the validator's share last): the children never add up to more
        shares = split_rho(left, weights + ([wanted_validator_rho] if wanted_validator_rho else []))
        validator_rho = shares.pop() if wanted_validator_rho else 0.0
        children = [oracle.child(r, f"partition{k + 1}", [schema.names[j] for j in p])
                    for k, (r, p) in enumerate(zip(shares, partitions))]
        # one scan answers every partition engine's planned queries and the validator's candidates
        oracle.prepare([q for e, p in zip(engines, partitions) for q in e.planned_queries(sub_schema(schema, p))]
                       + ([_pair_query(schema, p, groupings) for p in _cross_pairs(schema, partitions, groupings)]
                          if validator_rho else []))
        _log.info("dgm: %d partitions (%s), engines %s", len(partitions),
                  " | ".join(",".join(schema.columns[j].name for j in p) for p in partitions), [e.name for e in engines])
        models = _fit_partitions(schema, engines, partitions, children, tasks)
        validator = None
        if validator_rho:
            validator = self._validator(schema, oracle.child(validator_rho, "validator"), partitions, models, groupings)
        elif o.validator == "real":  # opt-in (checked by the config): NOT covered by the DP guarantee, and reported so
            real = oracle.rows_not_covered_by_dp(REAL_ROWS, 0, "dgm validator=real: random forest trained on real rows")
            validator = ForestValidator.fit(real, partitions)
        summary = {"partitions": [[schema.names[j] for j in p] for p in partitions], "engines": [e.name for e in engines],
                   "partition_rho": shares, "validator": o.validator, "validator_rho": validator_rho,
                   "validator_pairs": [[schema.names[i], schema.names[j]] for i, j in getattr(validator, "pairs", [])]}
        settings = JoinSettings(**{f.name: getattr(o, f.name) for f in fields(JoinSettings)})
        return DgmModel(len(schema), partitions, [e.name for e in engines], models, validator, settings, summary)

    def _partition_engines(self, n_partitions: int) -> list[Engine]:
        from .. import get_engine

        o = self.options
        names = o.engines if isinstance(o.engines, list) else [o.engines or DEFAULT_ENGINE] * n_partitions
        options = o.engine_options if isinstance(o.engine_options, list) else [o.engine_options or {}] * n_partitions
        for key, given in (("dgm.engines", names), ("dgm.engine_options", options)):
            if len(given) != n_partitions:
                raise ParameterError(key, f"one entry per partition ({n_partitions}), or a single one for all", given)
        if "dgm" in names:
            raise ParameterError("dgm.engines", "engines other than dgm (partitions are not split again)", names)
        if not all(isinstance(x, dict) for x in options):
            raise ParameterError("dgm.engine_options", "a mapping of option -> value (or a list of them)", options)
        return [get_engine(name, **opts) for name, opts in zip(names, options)]

    def _associated_partitions(self, schema: Schema, oracle: MeasurementOracle, groupings, n_partitions: int):
        """Columns grouped by Cramér's V of noisy 2-way marginals (ρ split evenly over the pairs)."""
        pairs = [p for p in itertools.combinations(range(len(schema)), 2) if cells(schema, p, groupings) <= MAX_PAIR_CELLS]
        strength = {}
        if pairs:
            queries = [_pair_query(schema, p, groupings) for p in pairs]
            released = oracle.measure_many(list(zip(queries, split_rho(oracle.rho_remaining, [1.0] * len(queries)))))
            strength = {p: association(m.values) for p, m in zip(pairs, released)}
        return grouped_by_association(len(schema), strength, n_partitions)

    def _validator(self, schema: Schema, oracle: MeasurementOracle, partitions, models, groupings) -> PairRatioValidator | None:
        """Select (exponential mechanism) and measure the cross-partition pairs whose random-join answer
        is worst, against marginals estimated from draws of the partition models."""
        pairs = _cross_pairs(schema, partitions, groupings)
        if not pairs:
            return None
        total = float(np.mean([m.estimated_rows for m in models]))
        grouping = {j: _grouping_array(schema, j, groupings) for j in range(len(schema))}
        rng = np.random.default_rng(0)  # modelling randomness: draws from the fitted partition models
        joined = assemble([model.sample_codes(MARGINAL_DRAWS, rng) for model in models], partitions, len(schema))
        marginal = {j: np.bincount(grouping[j][joined[:, j]], minlength=int(grouping[j].max()) + 1) / MARGINAL_DRAWS
                    for j in range(len(schema))}
        n_measured = min(len(pairs), self.options.validator_pairs or len(schema))
        queries = {p: _pair_query(schema, p, groupings) for p in pairs}
        oracle.prepare(list(queries.values()))
        joined_answer = {(i, j): total * np.outer(marginal[i], marginal[j]) for i, j in pairs}  # the random join's
        chosen, measured, remaining = [], [], list(pairs)
        for r in split_rho(oracle.rho_remaining, [1.0] * n_measured):
            select_rho, measure_rho = split_rho(r, [SELECT_SHARE, 1.0 - SELECT_SHARE])
            offered = [queries[p] for p in remaining]
            query = oracle.select(offered, "weighted_l1", [joined_answer[p] for p in remaining], select_rho)
            chosen.append(remaining.pop(offered.index(query)))
            measured.append(oracle.measure(query, measure_rho))
        return PairRatioValidator.fit(chosen, grouping, [m.values for m in measured], [m.sigma for m in measured], total,
                                      joined, marginal)


def _fit_partitions(schema: Schema, engines, partitions, children, tasks: TaskRunner) -> list:
    """Measure every partition on the driver (through its child oracle), then fit the engines that
    split their fit as parallel tasks (on the executors under Spark); the others fit on the driver."""
    jobs, models = {}, {}
    for k, (engine, p, child) in enumerate(zip(engines, partitions, children)):
        part = sub_schema(schema, p)
        if engine.splits_fit():
            jobs[k] = (engine, part, engine.measure(part, child))
        else:
            models[k] = engine.fit(part, child, tasks)
    fitted = tasks.map(_fit_measured, list(jobs.values()))
    models.update(zip(jobs, fitted))
    return [models[k] for k in range(len(partitions))]


def _fit_measured(job, seed: int):
    """One partition's fit from its noisy measurements (a task: post-processing only)."""
    engine, schema, measured = job
    return engine.fit_measurements(schema, measured)


def _cross_pairs(schema: Schema, partitions, groupings) -> list[tuple[int, int]]:
    """The validator's candidate pairs: columns in different partitions, within the cell cap."""
    home = {j: k for k, p in enumerate(partitions) for j in p}
    return [p for p in itertools.combinations(range(len(schema)), 2)
            if home[p[0]] != home[p[1]] and cells(schema, p, groupings) <= MAX_PAIR_CELLS]


def _grouping_array(schema: Schema, j: int, groupings) -> np.ndarray:
    return np.arange(schema.columns[j].size) if groupings[j] is None else np.asarray(groupings[j], dtype=np.int64)


def _pair_query(schema: Schema, pair, groupings) -> MarginalQuery:
    return MarginalQuery(tuple(schema.names[j] for j in pair), groupings=tuple(groupings[j] for j in pair))
