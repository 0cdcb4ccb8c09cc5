"""Frozen, validated run configuration (no Spark, no torch). Built from CLI args, dicts or YAML."""

from __future__ import annotations

from dataclasses import dataclass, fields
from pathlib import Path

import yaml

from .errors import ParameterError
from .schema.encoding import OutOfDomainPolicy


def check_rows(rows: object) -> None:
    if isinstance(rows, bool) or not isinstance(rows, int) or rows <= 0:
        raise ParameterError("rows", "a whole number > 0", rows)


def check_seed(seed: object) -> None:
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or seed < 0):
        raise ParameterError("seed", "a whole number >= 0 (or omitted for a random seed)", seed)


def check_policy(policy: object) -> OutOfDomainPolicy:
    try:
        return OutOfDomainPolicy(policy)
    except ValueError:
        raise ParameterError("out_of_domain", f"one of {[p.value for p in OutOfDomainPolicy]}", policy) from None


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Everything one ``spark-synth run`` needs; validated at construction."""

    input: str
    schema: str
    engine: str = "independent"
    epsilon: float
    delta: float
    rows: int
    output: str
    seed: int | None = None
    out_of_domain: str = OutOfDomainPolicy.CLIP.value
    overwrite: bool = False
    mlflow: bool = True
    spark_profile: str = "local"

    def __post_init__(self) -> None:
        from .engines import ENGINES  # engines and privacy never import pyspark: this stays Spark-free
        from .privacy import PrivacyBudget

        for name in ("input", "schema", "output"):
            value = getattr(self, name)
            if not isinstance(value, str) or not value.strip():
                raise ParameterError(name, "a non-empty path or table name", value)
        if self.engine not in ENGINES:
            raise ParameterError("engine", f"one of {sorted(ENGINES)}", self.engine)
        PrivacyBudget(self.epsilon, self.delta)  # validates both
        check_rows(self.rows)
        check_seed(self.seed)
        check_policy(self.out_of_domain)

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
