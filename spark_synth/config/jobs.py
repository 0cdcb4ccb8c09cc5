"""YAML job configs: ``conf/runs/*.yaml`` (one per dataset) over the engine defaults
(``spark_synth/conf/engines``), overridden by the jobs' flags, turned into the keyword arguments of
the command behind each job (``jobs/*.py``), every value checked with a message naming where it was set."""

from __future__ import annotations

import os
import re
from pathlib import Path

import yaml

from .. import conf
from ..engines.choice import AUTO
from ..engines import typed_config
from ..engines.options import OPTION_FLAG, option_where, setting_error
from ..errors import ParameterError
from .values import check_policy, check_rows, check_seed, parse_whole_number

# ---- YAML job configs: conf/runs/*.yaml (one per dataset) over the engine defaults (spark_synth/conf/engines) ----
#: What each job (jobs/*.py) reads from a run config. A file may hold the union of these keys
#: (plus a free-text ``description``); a job ignores the keys it does not use.
JOB_KEYS = {
    "run": ("input", "schema", "engine", "engine_options", "epsilon", "delta", "rows", "output", "seed",
            "out_of_domain", "overwrite", "mlflow", "spark_profile", "dataset_id", "privacy_unit", "max_rows_per_unit", "where", "rows_per"),
    "fit": ("input", "schema", "engine", "engine_options", "epsilon", "delta", "model", "out_of_domain", "mlflow",
            "spark_profile", "dataset_id", "privacy_unit", "max_rows_per_unit"),
    "sample": ("model", "rows", "output", "seed", "overwrite", "mlflow", "spark_profile", "where", "rows_per"),
}
_REQUIRED = {"run": ("input", "schema", "epsilon", "delta", "rows", "output"),
             "fit": ("input", "schema", "epsilon", "delta", "model"), "sample": ("model", "rows", "output")}
#: Keys an engine-defaults file (spark_synth/conf/engines/ENGINE.yaml) may set beneath a run config.
ENGINE_DEFAULT_KEYS = ("epsilon", "delta", "out_of_domain", "engine_options", "description")
_ENV = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def read_yaml_config(path: str | Path, allowed: tuple[str, ...]) -> dict:
    """A YAML mapping whose keys are all in ``allowed``, with ``${VAR}`` / ``${VAR:-default}`` expanded."""
    path = Path(path)
    if not path.is_file():
        raise ParameterError("config", "an existing YAML file (e.g. conf/runs/adult_sample.yaml)", str(path))
    try:
        raw = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" at line {mark.line + 1}" if mark is not None else ""
        raise ParameterError(f"config {path}", f"valid YAML (parse error{where})", type(exc).__name__) from None
    raw = {} if raw is None else raw
    if not isinstance(raw, dict):
        raise ParameterError(f"config {path}", "a YAML mapping of key: value", type(raw).__name__)
    unknown = sorted(str(k) for k in set(raw) - set(allowed))
    if unknown:
        raise ParameterError(f"keys of {path}", f"among {sorted(allowed)}", unknown)
    return {key: _expand_env(value, f"{key} (in {path})") for key, value in raw.items()}


def _expand_env(value, name: str):
    if not isinstance(value, str):
        return value

    def substitute(match: re.Match) -> str:
        variable, default = match.group(1), match.group(2)
        if variable in os.environ:
            return os.environ[variable]
        if default is None:
            raise ParameterError(name, f"a value whose ${{{variable}}} is set (or write ${{{variable}:-default}})", value)
        return default

    return _ENV.sub(substitute, value)


def load_engine_defaults(engine: str) -> dict:
    """The engine's defaults file ``engines/ENGINE.yaml`` (see :mod:`spark_synth.conf`; empty when none)."""
    path = conf.find("engines", engine)
    return read_yaml_config(path, ENGINE_DEFAULT_KEYS) if path is not None else {}


def load_job_config(command: str, config: str | Path | None = None, **overrides) -> dict:
    """Validated keyword arguments for the pipeline function behind job ``command``.

    Precedence: command-line ``overrides`` (None = not given) > the run config file > the engine's
    defaults file. Every key present is validated, with a message naming the key, where it came
    from and the allowed values. ``run`` returns :class:`RunConfig` fields; ``fit`` and ``sample``
    the arguments of :func:`~spark_synth.commands.fit_and_save` / ``load_and_sample``.
    """
    if command not in JOB_KEYS:
        raise ParameterError("job", f"one of {sorted(JOB_KEYS)}", command)
    allowed = tuple(sorted(set().union(*JOB_KEYS.values()) | {"description"}))
    raw_config = read_yaml_config(config, allowed) if config else {}
    merged = {k: (v, f"{k} (in {config})") for k, v in raw_config.items()}
    merged.update({k: (v, OPTION_FLAG if k == "engine_options" else f"--{k.replace('_', '-')}")
                   for k, v in overrides.items() if v is not None})
    unknown = sorted(set(merged) - set(allowed))
    if unknown:
        raise ParameterError("overrides", f"among {sorted(allowed)}", unknown)
    engine, options, origins = AUTO, None, {}  # engine option -> the file (or flag) that set it
    if "engine" in JOB_KEYS[command]:
        engine = _check_value("engine", *merged.get("engine", (AUTO, "engine")))
        defaults_engine = _auto_choice(merged.get("schema", (None,))[0]) if engine == AUTO else engine
        defaults_file = conf.find("engines", defaults_engine) or f"engines/{defaults_engine}.yaml"
        defaults = load_engine_defaults(defaults_engine) if defaults_engine else {}
        if engine == AUTO:  # the chosen engine's run choices (budget, policy), never options: auto takes none
            defaults.pop("engine_options", None)
        for key, value in defaults.items():
            merged.setdefault(key, (value, f"{key} (in {defaults_file})"))
        if merged.pop("engine_options", None) is not None:  # key by key: defaults < config file < command line
            layers = [(defaults.get("engine_options"), str(defaults_file)), (raw_config.get("engine_options"), str(config)),
                      (overrides.get("engine_options"), OPTION_FLAG)]
            options = {}
            for layer, source in layers:
                if layer is not None:
                    if not isinstance(layer, dict) or not all(isinstance(k, str) for k in layer):
                        raise setting_error(option_where(source), "a mapping of option name -> value", layer)
                    if engine == AUTO and layer:
                        raise setting_error(option_where(source), "no engine options with engine auto: name the engine "
                                            "they belong to (e.g. engine: fpt)", layer)
                    options.update(layer)
                    origins.update(dict.fromkeys(layer, source))
    out = {}
    for key in JOB_KEYS[command]:
        if key in merged:
            out[key] = _check_value(key, *merged[key])
    missing = [k for k in _REQUIRED[command] if k not in out]
    if missing:
        raise ParameterError(missing[0], f"set in the config file or given as --{missing[0].replace('_', '-')}", None)
    if "epsilon" in out:
        try:
            from ..privacy import PrivacyBudget

            PrivacyBudget(out["epsilon"], out["delta"])
        except ParameterError as exc:
            raise ParameterError(merged[exc.name][1], exc.allowed, exc.value) from None
    if options is not None and engine != AUTO:  # the one check of the options: names, types, ranges
        out["engine_options"] = typed_config(engine, options, origins=origins)
    return out


def _auto_choice(schema_path) -> str | None:
    """The engine ``auto`` picks for the schema at ``schema_path`` (public: its width), or None when
    the schema cannot be read here (its error comes later, in order)."""
    from ..engines.choice import choose_engine
    from ..schema import load_schema

    try:
        return choose_engine(len(load_schema(schema_path))).engine
    except Exception:  # noqa: BLE001 - only which defaults file applies; the schema's own error is raised later
        return None


def _check_value(key: str, value, name: str):
    if key in ("input", "schema", "output", "model", "spark_profile", "description"):
        if not isinstance(value, str) or not value.strip():
            raise ParameterError(name, "a non-empty path or table name" if key != "description" else "text", value)
        return value
    if key == "dataset_id":
        if not isinstance(value, str) or not value.strip():
            raise ParameterError(name, "a non-empty dataset id naming the table's budget ledger (e.g. main.sales.customers)", value)
        return value
    if key in ("where", "rows_per"):
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ParameterError(name, "a condition text (docs/sampling.md)" if key == "where" else "a column name", value)
        return value
    if key == "privacy_unit":
        if value is not None and (not isinstance(value, str) or not value.strip()):
            raise ParameterError(name, "the name of the column that identifies a person (or null for row-level privacy)", value)
        return value
    if key == "max_rows_per_unit":
        number = None if value is None else _as_number(value, int)
        if value is not None and (number is None or number < 1):
            raise ParameterError(name, "a whole number >= 1 (the most rows of one unit the fit keeps)", value)
        return number
    if key == "engine":
        from ..engines import ENGINES

        if value not in ENGINES and value != AUTO:
            raise ParameterError(name, f"one of {sorted([AUTO, *ENGINES])}", value)
        return value
    if key in ("epsilon", "delta"):
        number = _as_number(value, float)
        if number is None:
            raise ParameterError(name, "a number (write YAML exponents as 1.0e-9 or quote them)", value)
        return number
    if key in ("rows", "seed"):
        number = _as_number(value, int)
        try:
            (check_rows if key == "rows" else check_seed)(number if number is not None else value)
        except ParameterError as exc:
            raise ParameterError(name, exc.allowed, value) from None
        return number
    if key in ("overwrite", "mlflow"):
        if not isinstance(value, bool):
            raise ParameterError(name, "true or false", value)
        return value
    if key == "out_of_domain":
        try:
            return check_policy(value).value
        except ParameterError as exc:
            raise ParameterError(name, exc.allowed, value) from None
    raise ParameterError(name, "a known config key", key)  # pragma: no cover (keys are checked first)


def _as_number(value, kind):
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and kind is int:
        try:
            return parse_whole_number(value)  # "1e6", "1_000_000", "1,000,000"
        except ValueError:
            return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            return None
    if isinstance(value, (int, float)):
        if kind is int:
            return int(value) if float(value).is_integer() else None
        return float(value)
    return None
