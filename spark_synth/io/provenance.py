"""Provenance of a synthetic Delta output: what a reader of the table needs to know about it.

Every value is public or DP: the spend (ε, δ, ρ) and the guarantee of the fit's privacy report, the
engine, the spark-synth version, and two random ids (the fit id and the MLflow run id) — no row
count, no timing. Rows sampled from a logged or registered MLflow model also name that model
(:class:`SourceModel`: its URI, and the registered name and version it resolved to) — identifiers
the user chose, not data. The writer stores them three ways (see :func:`~spark_synth.io.write_output`):
table properties ``spark_synth.*``, the commit's ``userMetadata`` (JSON) and the table comment.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

#: Prefix of the table properties spark-synth sets (not ``delta.``: those are Delta's own settings).
PROPERTY_PREFIX = "spark_synth."


@dataclass(frozen=True)
class SourceModel:
    """The MLflow model rows were sampled from. ``uri`` is the URI as the user gave it
    (``models:/name@champion``, ``models:/name/3``, ``runs:/<run id>/model``, …); for a registry URI,
    ``registered_model`` and ``version`` are the version it resolved to (an alias or ``latest`` is
    resolved once, before loading, so the rows come from exactly that version) and ``alias`` the
    alias it named. ``run_id`` is the MLflow run the model was logged in (the fit's run), when known."""

    uri: str
    registered_model: str | None = None
    version: str | None = None
    alias: str | None = None
    run_id: str | None = None

    def to_properties(self) -> dict[str, str]:
        """Its ``spark_synth.*`` table properties: ``model_uri`` always, the others when known."""
        values = {"model_uri": self.uri, "registered_model": self.registered_model,
                  "model_version": self.version, "model_alias": self.alias}
        return {PROPERTY_PREFIX + key: str(value) for key, value in values.items() if value is not None}

    def describe(self) -> str:
        """One phrase for the table comment."""
        if self.registered_model is None:
            return f"the MLflow model {self.uri}"
        return f"the MLflow model {self.uri} (registered model {self.registered_model}, version {self.version})"


@dataclass(frozen=True)
class Provenance:
    """Where a synthetic table comes from. ``mlflow_run_id`` is None when the fit was not tracked
    (``--no-mlflow``): then it is left out of the properties and null in ``userMetadata``.
    ``source_model`` is the MLflow model the rows were sampled from (None: a fit or a saved
    synthesizer directory); its keys appear only when it is set."""

    epsilon: float
    delta: float
    rho: float
    engine: str
    version: str
    fit_id: str
    mlflow_run_id: str | None = None
    dp: bool = True
    neighbouring_relation: str = "add/remove one row"
    source_model: SourceModel | None = None

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
        properties = {PROPERTY_PREFIX + key: value for key, value in values.items()}
        if self.source_model is not None:
            properties.update(self.source_model.to_properties())
        return properties

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
        origin = f" (here: {self.source_model.describe()})" if self.source_model is not None else ""
        return (f"{what} Rows are sampled from a model fitted to noisy statistics{origin}, not copied from the source. "
                f"Details in the spark_synth.* table properties.")
