"""The fitted DGM model: one fitted model per column partition, joined by the validator when sampled."""

from __future__ import annotations

from dataclasses import asdict

import numpy as np

from ...errors import InternalError
from ...schema import Schema
from ..base import FittedModel
from ..evidence import Evidence
from .join import JoinSettings, validator_join
from .forest_validator import ForestValidator
from .validator import PairRatioValidator


def sub_schema(schema: Schema, columns) -> Schema:
    """The public schema of one partition (its columns in schema order)."""
    kept = tuple(schema.columns[j] for j in columns)
    target = schema.target if schema.target in {c.name for c in kept} else None
    return Schema(kept, name=schema.name, target=target, task=schema.task if target else None)


class DgmModel(FittedModel):
    """Partitions (column indices), each with its engine's fitted model; the validator (DP, the opt-in forest, or None:
    random join) and the join settings. Sampling joins independently drawn partition samples."""

    engine = "dgm"

    def __init__(self, n_columns: int, partitions, engines, models, validator: PairRatioValidator | ForestValidator | None,
                 settings: JoinSettings, summary: dict | None = None):
        self.n_columns = int(n_columns)
        self.partitions = [tuple(int(j) for j in p) for p in partitions]
        self.engines = list(engines)
        self.models = list(models)
        self.validator = validator
        self.settings = settings
        self._summary = dict(summary or {})
        if len(self.models) != len(self.partitions) or sorted(j for p in self.partitions for j in p) != list(range(self.n_columns)):
            raise InternalError("DGM model: partitions must be disjoint, cover every column and have one model each")

    sampling_counters = ("filled_rows",)
    sampling_report_name = "join"
    sampling_note = "; each task joins the partitions' pieces itself"

    def sample_codes(self, n_rows: int, rng: np.random.Generator) -> np.ndarray:
        return self.sample_joined(n_rows, rng)[0]

    def sample_joined(self, n_rows: int, rng: np.random.Generator) -> tuple[np.ndarray, int]:
        """``n_rows`` code rows and how many of them the validator did not accept (random joins)."""
        return validator_join(lambda p, m: self.models[p].sample_codes(m, rng), self.partitions, self.n_columns, n_rows,
                              None if self.validator is None else self.validator.score, self.settings, rng)

    def sample_counted(self, n_rows: int, rng: np.random.Generator) -> tuple[np.ndarray, dict[str, int]]:
        codes, filled = self.sample_joined(n_rows, rng)
        return codes, {"filled_rows": int(filled)}

    def sampling_report(self, counts: dict[str, int | None]) -> tuple[dict, str]:
        """The join rule and ``filled_rows``, the rows the validator never accepted (random joins)."""
        filled, rule = counts.get("filled_rows"), self.settings.acceptance
        line = (f"sample: dgm join ({rule}) done; the session did not report how many rows were filled" if filled is None
                else f"sample: dgm join ({rule}) done; {int(filled)} row(s) filled by random joins")
        return {"acceptance": rule, "filled_rows": None if filled is None else int(filled)}, line

    def conditioned(self, evidence: Evidence) -> tuple["DgmModel", float]:
        """Each partition's model conditioned on the evidence on its columns, joined as usual (a
        condition is a conjunction of per-column constraints, so it splits over the partitions); the
        probability is the product of the partitions' (the join before the validator re-matches pieces).
        The swap join keeps every piece, so each partition's columns follow its conditioned model exactly."""
        models, probability = [], 1.0
        for model, columns in zip(self.models, self.partitions):
            part = evidence.for_columns(columns)
            if part:
                model, p = model.conditioned(part)
                probability *= p
            models.append(model)
        return DgmModel(self.n_columns, self.partitions, self.engines, models, self.validator, self.settings,
                        self._summary), probability

    def fit_summary(self) -> dict:
        return dict(self._summary)

    def to_state(self) -> dict:
        return {"n_columns": self.n_columns, "partitions": [list(p) for p in self.partitions], "engines": self.engines,
                "models": [m.to_state() for m in self.models],
                "validator": None if self.validator is None else self.validator.to_state(),
                "join": asdict(self.settings),
                "summary": self._summary}

    @classmethod
    def from_state(cls, state: dict, schema: Schema) -> "DgmModel":
        from .. import model_class  # the registry (partition engines are loaded as needed)

        if state["n_columns"] != len(schema):
            raise InternalError("saved dgm model does not match its schema's columns")
        models = [model_class(name).from_state(s, sub_schema(schema, p))
                  for name, s, p in zip(state["engines"], state["models"], state["partitions"])]
        saved = state["validator"]
        validator = (None if saved is None else ForestValidator.from_state(saved) if saved.get("kind") == "forest"
                     else PairRatioValidator.from_state(saved))
        return cls(state["n_columns"], state["partitions"], state["engines"], models, validator,
                   JoinSettings(**state["join"]), state.get("summary"))
