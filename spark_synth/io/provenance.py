"""Provenance of a synthetic Delta output: what a reader of the table needs to know about it.

Every value is public or DP: the spend (ε, δ, ρ) and the guarantee of the fit's privacy report, the
engine, the spark-synth version, and two random ids (the fit id and the MLflow run id) — no row
count, no timing. The writer stores them three ways (see :func:`~spark_synth.io.write_output`):
table properties ``spark_synth.*``, the commit's ``userMetadata`` (JSON) and the table comment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

#: Prefix of the table properties spark-synth sets (not ``delta.``: those are Delta's own settings).
PROPERTY_PREFIX = "spark_synth."


@dataclass(frozen=True)
class Provenance:
    """Where a synthetic table comes from. ``mlflow_run_id`` is None when the fit was not tracked
    (``--no-mlflow``): then it is left out of the properties and null in ``userMetadata``."""

    epsilon: float
    delta: float
    rho: float
    engine: str
    version: str
    fit_id: str
    mlflow_run_id: str | None = None
    dp: bool = True
    neighbouring_relation: str = "add/remove one row"

    def to_properties(self) -> dict[str, str]:
        """The ``spark_synth.*`` table properties (strings; floats as ``repr``, exact)."""
        values = {
            "synthetic": "true",
            "dp": "true" if self.dp else "false",
            "epsilon": repr(float(self.epsilon)),
            "delta": repr(float(self.delta)),
            "rho": repr(float(self.rho)),
            "neighbouring_relation": self.neighbouring_relation,
            "engine": self.engine,
            "version": self.version,
            "fit_id": self.fit_id,
        }
        if self.mlflow_run_id:
            values["mlflow_run_id"] = self.mlflow_run_id
        return {PROPERTY_PREFIX + key: value for key, value in values.items()}

    def user_metadata(self) -> str:
        """The commit's ``userMetadata``: the properties as one JSON object (``mlflow_run_id`` null when absent)."""
        values = {key[len(PROPERTY_PREFIX):]: value for key, value in self.to_properties().items()}
        values.setdefault("mlflow_run_id", None)
        return json.dumps({"spark_synth": values}, sort_keys=True, separators=(",", ":"))

    def comment(self) -> str:
        """The table comment: what the table is, in one sentence, then the spend."""
        spend = (f"epsilon={self.epsilon:.6g}, delta={self.delta:.3g} (rho={self.rho:.6g} zCDP), "
                 f"{self.neighbouring_relation}")
        if self.dp:
            what = f"Differentially private (DP) synthetic data made by spark-synth {self.version} ({self.engine}): {spend}."
        else:
            what = (f"Synthetic data made by spark-synth {self.version} ({self.engine}), NOT covered by a DP guarantee "
                    f"(the fit used real rows outside it; nominal {spend}).")
        return (f"{what} Rows are sampled from a model fitted to noisy statistics, not copied from the source. "
                f"Details in the spark_synth.* table properties.")
