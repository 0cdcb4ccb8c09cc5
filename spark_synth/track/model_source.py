"""Sampling a logged or registered synthesizer model into a table that says where it came from.

:func:`write_model_sample` is :meth:`Synthesizer.write <spark_synth.Synthesizer.write>` for a model
in MLflow: the same all-or-nothing write and the same provenance (the fit's ε, δ, ρ, fit id, engine,
MLflow run id), plus the model it was sampled from (:class:`~spark_synth.io.SourceModel`): the URI
as given and, for a registry URI (``models:/NAME/VERSION``, ``models:/NAME@ALIAS``,
``models:/NAME/latest``), the registered name and the version it resolved to. An alias is resolved
once, before loading, and that version is what is loaded — so the recorded version is the one the
rows came from even if the alias moves meanwhile. ``spark-synth sample --model URI`` (and
``jobs/sample.py``) go through :func:`load_model_synthesizer` too.
"""

from __future__ import annotations

import urllib.parse
import warnings

from ..errors import UserInputError
from ..io.provenance import SourceModel

#: URI schemes ``spark-synth sample --model`` reads from MLflow (anything else is a saved directory).
MODEL_URI_SCHEMES = ("models:/", "runs:/")


def is_model_uri(value) -> bool:
    """True for an MLflow model URI (``models:/…``, ``runs:/…``), False for a path."""
    return isinstance(value, str) and value.strip().startswith(MODEL_URI_SCHEMES)


def resolve_model(model_uri: str) -> tuple[SourceModel, str]:
    """The :class:`~spark_synth.io.SourceModel` of ``model_uri`` and the URI to load it from (a
    registry URI pinned to its resolved version ``models:/NAME/VERSION``; any other URI as given).
    A model or version that does not exist is a :class:`~spark_synth.errors.UserInputError`."""
    import mlflow
    from mlflow.exceptions import MlflowException

    if not isinstance(model_uri, str) or not model_uri.strip():
        raise UserInputError(f"model URI {model_uri!r} is empty; pass e.g. models:/NAME/VERSION, models:/NAME@ALIAS "
                             "or runs:/RUN_ID/model")
    uri = model_uri.strip()
    registry = _registry_reference(uri)
    try:
        if registry is None:  # runs:/…, a logged model's models:/m-…, a path: no registered version
            return SourceModel(uri=uri, run_id=mlflow.models.get_model_info(uri).run_id or None), uri
        name, version, alias, stage = registry
        client = mlflow.MlflowClient()
        if alias is not None:
            found = client.get_model_version_by_alias(name, alias)
        elif version is not None:
            found = client.get_model_version(name, version)
        else:  # models:/NAME/latest or a (deprecated) stage: MLflow's own rule, the highest such version
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # get_latest_versions is deprecated along with the stages
                candidates = client.get_latest_versions(name, None if stage is None else [stage])
            if not candidates:
                raise UserInputError(f"registered model '{name}' has no version{f' in stage {stage}' if stage else ''} "
                                     f"(model URI {uri})")
            found = max(candidates, key=lambda v: int(v.version))
        pinned = f"models:/{name}/{found.version}"
        run_id = getattr(found, "run_id", None) or mlflow.models.get_model_info(pinned).run_id or None
    except MlflowException as exc:
        reason = str(getattr(exc, "message", exc)).strip().splitlines()[0]
        raise UserInputError(f"cannot read the MLflow model '{uri}' ({reason}); check the URI, the registered model's "
                             f"name and version or alias, and $MLFLOW_TRACKING_URI (now {mlflow.get_tracking_uri()})") from None
    return SourceModel(uri=uri, registered_model=name, version=str(found.version), alias=alias, run_id=run_id), pinned


def _registry_reference(uri: str):
    """``(name, version, alias, stage)`` of a registry URI, or None for any other model URI.

    ``models:/NAME/VERSION`` → version; ``models:/NAME@ALIAS`` → alias; ``models:/NAME/latest`` →
    neither; ``models:/NAME/STAGE`` → stage. ``models:/ID`` (one part, no ``@``) is MLflow 3's logged
    model, and a URI naming another workspace (``models://PROFILE@databricks/…``) is loaded as given."""
    parsed = urllib.parse.urlparse(uri, allow_fragments=False)
    if parsed.scheme != "models" or parsed.netloc:
        return None
    parts = parsed.path.lstrip("/").split("/")
    if len(parts) == 2 and parts[0] and parts[1]:
        name, suffix = parts
        if suffix.isdigit():
            return name, suffix, None, None
        return name, None, None, None if suffix.lower() == "latest" else suffix
    if len(parts) == 1 and "@" in parts[0]:
        name, _, alias = parts[0].rpartition("@")
        if name and alias:
            return name, None, alias, None
    return None


def load_model_synthesizer(model_uri: str):
    """``(synthesizer, source_model)``: the :class:`~spark_synth.Synthesizer` inside a logged or
    registered model, loaded from the version ``model_uri`` resolves to, and that
    :class:`~spark_synth.io.SourceModel` (for :meth:`Synthesizer.write`'s provenance)."""
    from .pyfunc import load_synthesizer

    source, pinned = resolve_model(model_uri)
    synth = load_synthesizer(pinned)
    if synth is None or not hasattr(synth, "privacy_report_"):
        raise UserInputError(f"the MLflow model '{source.uri}' is not a spark-synth synthesizer model")
    return synth, source


def write_model_sample(model_uri: str, rows: int, output: str, seed: int | None = None, overwrite: bool = False,
                       spark=None, *, conditions=None, rows_per: str | None = None) -> str:
    """Sample ``rows`` rows from a logged or registered model and write them to ``output`` (a path
    or table name; Delta unless it ends in ``.csv`` / ``.parquet``) — all or nothing, as
    :meth:`Synthesizer.write <spark_synth.Synthesizer.write>`: an existing output is refused unless
    ``overwrite`` (before the model is even loaded), and a Delta output records the fit's provenance
    and the model's URI, registered name and resolved version in the same commit (table properties
    ``spark_synth.*``, comment, ``userMetadata``). Returns where the rows went. Spends no budget.
    ``conditions`` and ``rows_per``: as :meth:`Synthesizer.sample <spark_synth.Synthesizer.sample>`
    (docs/sampling.md).

    >>> write_model_sample("models:/main.synth.customers@champion", 1_000_000, "main.synth.customers_v3", seed=7)
    """
    from ..config import check_rows, check_seed
    from ..io import check_output

    check_rows(rows)
    check_seed(seed)
    if spark is None:
        from ..session import get_spark

        spark = get_spark()
    check_output(spark, output, overwrite)  # fail fast, before loading the model
    synth, source = load_model_synthesizer(model_uri)
    return synth.write(rows, output, seed=seed, overwrite=overwrite, spark=spark, source_model=source,
                       conditions=conditions, rows_per=rows_per)
