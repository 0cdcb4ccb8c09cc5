"""A tiny engine written the way a new engine is (docs/engines.md), to show the seam is open:
it lives here, outside ``spark_synth/engines/``, and needs no edit to the pipeline, ``measure/``
or ``privacy/`` — only :func:`spark_synth.engines.register_engine`.

SELECT/MEASURE: every 1-way histogram (``first_share`` of ρ); then ``rounds`` times: privately
select the 2-way marginal that the current model answers worst (weighted L1, exponential
mechanism) and measure it. FIT: columns independent, except the selected pairs, drawn jointly.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np

from spark_synth.engines import Engine, FittedModel
from spark_synth.engines.postprocess import estimate_total, probabilities_from_counts
from spark_synth.errors import ParameterError
from spark_synth.privacy import split_rho
from spark_synth.queries import MarginalQuery


@dataclass(frozen=True, kw_only=True)
class TinySelectConfig:
    rounds: int = 2
    first_share: float = 0.5

    def __post_init__(self):
        if self.rounds < 1:
            raise ParameterError("tiny-select.rounds", "a whole number >= 1", self.rounds)


class TinySelectModel(FittedModel):
    engine = "tiny-select"

    def __init__(self, one_way, pairs):
        self.one_way = [np.asarray(p, dtype=float) for p in one_way]
        self.pairs = [(tuple(cols), np.asarray(p, dtype=float)) for cols, p in pairs]

    def sample_codes(self, n_rows, rng):
        codes = np.stack([rng.choice(p.size, n_rows, p=p) for p in self.one_way], axis=1)
        for (a, b), joint in self.pairs:
            cells = rng.choice(joint.size, n_rows, p=joint.ravel())
            codes[:, a], codes[:, b] = np.unravel_index(cells, joint.shape)
        return codes

    def to_state(self):
        return {"one_way": [p.tolist() for p in self.one_way], "pairs": [[list(c), p.tolist()] for c, p in self.pairs]}

    @classmethod
    def from_state(cls, state, schema):
        return cls(state["one_way"], state["pairs"])


def _project(measurement_and_total, seed):
    """A task: noisy 2-way counts → a probability table (post-processing, run by the task runner)."""
    values, total = measurement_and_total
    return probabilities_from_counts(values, total)


class TinySelectEngine(Engine):
    name = "tiny-select"
    model_class = TinySelectModel
    config_class = TinySelectConfig

    def fit(self, schema, oracle, tasks):
        o = self.options
        first_rho, *round_rhos = split_rho(oracle.rho_remaining, [o.first_share] + [(1 - o.first_share) / o.rounds] * o.rounds)
        one_way = [MarginalQuery((c.name,)) for c in schema]
        released = oracle.measure_many(list(zip(one_way, split_rho(first_rho, [1.0] * len(one_way)))))
        total = estimate_total(released)
        probabilities = [probabilities_from_counts(m.values, total) for m in released]
        candidates = [MarginalQuery(pair) for pair in itertools.combinations(schema.names, 2)]
        oracle.prepare(candidates)  # the whole candidate workload in one scan
        chosen = []
        for rho in round_rhos:
            model = [total * np.outer(probabilities[schema.names.index(a)], probabilities[schema.names.index(b)])
                     for a, b in (q.columns for q in candidates)]
            select_rho, measure_rho = split_rho(rho, [1.0, 3.0])
            query = oracle.select(candidates, "weighted_l1", model, select_rho)
            chosen.append(oracle.measure(query, measure_rho))
            candidates.remove(query)
        joints = tasks.map(_project, [(m.values, total) for m in chosen], seed=0)
        pairs = [(tuple(schema.names.index(c) for c in m.columns), joint) for m, joint in zip(chosen, joints)]
        return TinySelectModel(probabilities, pairs)
