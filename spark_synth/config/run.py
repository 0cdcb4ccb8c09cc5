"""The frozen, validated configuration of one ``spark-synth run`` (no Spark, no torch)."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any

import yaml

from ..engines.choice import AUTO
from ..errors import ParameterError
from ..schema.encoding import OutOfDomainPolicy
from .values import check_output_apart, check_policy, check_rows, check_seed


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Everything one ``spark-synth run`` needs; validated at construction.

    ``engine_options`` is the engine's typed config (its config dataclass, e.g. ``FptConfig``), made
    where the options were given (the CLI's ``--engine-option``, a job's YAML) and kept as it is; a
    mapping given here is turned into it once (:func:`~spark_synth.engines.options.typed_config`).
    None: the engine's defaults (``auto`` takes no options)."""

    input: str
    schema: str
    engine: str = "auto"
    epsilon: float
    delta: float
    rows: int
    output: str
    seed: int | None = None
    out_of_domain: str = OutOfDomainPolicy.CLIP.value
    overwrite: bool = False
    mlflow: bool = True
    spark_profile: str = "local"
    engine_options: Any = None
    dataset_id: str | None = None
    #: Person-level privacy: the column identifying a unit, and the most rows of one unit kept (docs/privacy.md).
    privacy_unit: str | None = None
    max_rows_per_unit: int | None = None
    #: The output's shape (docs/sampling.md): a condition every row satisfies, a column whose values get their model share.
    where: str | None = None
    rows_per: str | None = None

    def __post_init__(self) -> None:
        from ..engines import ENGINES  # engines and privacy never import pyspark: this stays Spark-free
        from ..privacy import PrivacyBudget
        from ..privacy.unit import PrivacyUnit

        for name in ("input", "schema", "output"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ParameterError(name, "a non-empty path or table name", value)
        if self.engine not in ENGINES and self.engine != AUTO:
            raise ParameterError("engine", f"one of {sorted([AUTO, *ENGINES])}", self.engine)
        PrivacyBudget(self.epsilon, self.delta)  # validates both
        check_rows(self.rows)
        check_seed(self.seed)
        check_policy(self.out_of_domain)
        check_output_apart(self.input, self.output)
        if self.engine_options is not None:
            if self.engine == AUTO:
                raise ParameterError("engine_options", "none with engine auto: name the engine they belong to "
                                                       "(e.g. engine='fpt')", self.engine_options)
            from ..engines import typed_config

            object.__setattr__(self, "engine_options", typed_config(self.engine, self.engine_options))
        if self.dataset_id is not None and (not isinstance(self.dataset_id, str) or not self.dataset_id.strip()):
            raise ParameterError("dataset_id", "a non-empty dataset id naming the table's budget ledger (e.g. "
                                               "main.sales.customers)", self.dataset_id)
        PrivacyUnit.of(self.privacy_unit, self.max_rows_per_unit)  # validates both
        for name in ("where", "rows_per"):  # checked against the schema when it is read (commands.run)
            value = getattr(self, name)
            if value is not None and (not isinstance(value, str) or not value.strip()):
                raise ParameterError(name, "a condition text (docs/sampling.md)" if name == "where" else "a column name", value)

    @classmethod
    def from_dict(cls, raw: dict) -> "RunConfig":
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(raw) - known)
        if unknown:
            raise ParameterError("run config keys", f"among {sorted(known)}", unknown)
        return cls(**raw)

    @classmethod
    def from_yaml(cls, path: str | Path, **overrides) -> "RunConfig":
        raw = yaml.safe_load(Path(path).read_text(encoding="utf-8")) or {}
        if not isinstance(raw, dict):
            raise ParameterError(f"run config '{path}'", "a YAML mapping", type(raw).__name__)
        raw.update({k: v for k, v in overrides.items() if v is not None})
        return cls.from_dict(raw)
