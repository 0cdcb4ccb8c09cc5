"""Frozen, validated run configuration (no Spark, no torch). Built from CLI args, dicts or YAML."""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, fields
from pathlib import Path

import yaml

from . import conf
from .engines.choice import AUTO
from .errors import ParameterError
from .schema.encoding import OutOfDomainPolicy


#: Public maximum of synthetic rows one ``run``/``sample`` writes (``--rows``): 10^11. It keeps the
#: generated partition count (rows / 250,000) and every row index well inside Spark's limits; write
#: more as several outputs with different seeds.
MAX_ROWS = 10**11
#: Largest sampling seed (``--seed``): a signed 64-bit integer, as Spark and the MLflow params store it.
MAX_SEED = 2**63 - 1


_GROUPED = re.compile(r"[+-]?\d{1,3}(,\d{3})+")
#: How a whole number may be written on the command line (``--rows``, ``--seed``).
WHOLE_NUMBER_FORMS = "e.g. 1000000, 1e6, 1_000_000 or 1,000,000"


def parse_whole_number(text: str) -> int:
    """``1000000``, ``1e6``, ``1_000_000``, ``1,000,000`` (and ``1.0e6``) → 1000000; ValueError,
    naming the accepted forms, for anything that is not a whole number (``1.5``, ``1e-3``, ``ten``)."""
    from decimal import Decimal, InvalidOperation

    raw = str(text).strip()
    digits = raw.replace(",", "") if _GROUPED.fullmatch(raw) else raw
    try:
        return int(digits)  # also takes Python's 1_000_000
    except ValueError:
        pass
    try:
        number = Decimal(digits)  # 1e6, 1.5e3, 1_000.0
    except InvalidOperation:
        number = None
    if number is None or not number.is_finite():
        raise ValueError(f"a whole number ({WHOLE_NUMBER_FORMS}); got {raw!r}")
    if number != number.to_integral_value():
        raise ValueError(f"a whole number ({WHOLE_NUMBER_FORMS}); got {raw!r}, which is not whole")
    if number.adjusted() > 40:  # far past every limit: no need to build the integer
        raise ValueError(f"a whole number of at most 40 digits; got {raw!r}")
    return int(number)


def check_rows(rows: object) -> None:
    if isinstance(rows, bool) or not isinstance(rows, int) or not 0 < rows <= MAX_ROWS:
        raise ParameterError("rows", f"a whole number > 0 and at most the public maximum {MAX_ROWS:,} (--rows; "
                                     f"write more as several outputs with different seeds)", rows)


def check_seed(seed: object) -> None:
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed <= MAX_SEED):
        raise ParameterError("seed", f"a whole number from 0 to 2^63 - 1 = {MAX_SEED} (--seed; or omitted for a "
                                     f"random seed)", seed)


def check_policy(policy: object) -> OutOfDomainPolicy:
    try:
        return OutOfDomainPolicy(policy)
    except ValueError:
        raise ParameterError("out_of_domain", f"one of {[p.value for p in OutOfDomainPolicy]}", policy) from None


def check_output_apart(source: str, output: str, *, output_flag: str = "--output", source_name: str = "input") -> None:
    """Refuse an output that is the input, inside it, or holds it: writing (or ``--overwrite``) there
    would replace the table being read, or mix synthetic files into it.

    ``fit`` checks its ``--model`` directory against ``--input`` (``output_flag="--model"``) and
    ``sample`` its ``--output`` against ``--model`` (``source_name="model"``); both are paths, never
    table names. A source given as a bare name (``data``) that exists as a local path is that path,
    as :func:`~spark_synth.io.read_input` reads it.
    """
    from .errors import OutputError
    from .io.locations import is_table_name, quote_table_name

    def normal(target: str, is_path: bool, is_source: bool) -> str:
        target = target.strip().rstrip("/") or "/"
        if not is_path and is_table_name(target) and not (is_source and os.path.exists(target)):
            return "table:" + quote_table_name(target).lower()  # db.t and `db`.`t` are one table
        if "://" in target or target.startswith("dbfs:"):
            return target
        return os.path.realpath(os.path.expanduser(target))

    if not isinstance(source, str) or not isinstance(output, str):
        return
    what = "output" if output_flag == "--output" else output_flag
    article = "an" if output_flag.lstrip("-")[:1] in "aeiou" else "a"
    a = normal(source, is_path=source_name != "input", is_source=True)
    b = normal(output, is_path=output_flag != "--output", is_source=False)
    if a == b:
        reads = "the table it reads" if source_name == "input" else f"the {source_name} it reads"
        raise OutputError(f"{what} '{output}' is the {source_name}; choose another {output_flag} (spark-synth never "
                          f"writes over {reads})")
    if not a.startswith("table:") and not b.startswith("table:"):
        if b.startswith(a.rstrip("/") + "/"):
            why = ("its files would be read as input rows next time" if source_name == "input"
                   else f"its files would be mixed into the {source_name}")
            raise OutputError(f"{what} '{output}' is inside the {source_name} '{source}'; choose {article} "
                              f"{output_flag} outside it ({why})")
        if a.startswith(b.rstrip("/") + "/"):
            why = (f"writing there would replace the {source_name}" if output_flag == "--output"
                   else f"its files would be mixed with the {source_name}'s")
            raise OutputError(f"{what} '{output}' holds the {source_name} '{source}'; choose another {output_flag} "
                              f"({why})")


@dataclass(frozen=True, kw_only=True)
class RunConfig:
    """Everything one ``spark-synth run`` needs; validated at construction."""

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
    engine_options: dict | None = None
    dataset_id: str | None = None
    #: Person-level privacy: the column identifying a unit, and the most rows of one unit kept (docs/privacy.md).
    privacy_unit: str | None = None
    max_rows_per_unit: int | None = None

    def __post_init__(self) -> None:
        from .engines import ENGINES  # engines and privacy never import pyspark: this stays Spark-free
        from .privacy import PrivacyBudget
        from .privacy.unit import PrivacyUnit

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
        if self.engine_options is not None and not isinstance(self.engine_options, dict):
            raise ParameterError("engine_options", "a mapping of option name -> value", self.engine_options)
        if self.dataset_id is not None:
            _check_value("dataset_id", self.dataset_id, "dataset_id")
        PrivacyUnit.of(self.privacy_unit, self.max_rows_per_unit)  # validates both

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


# ---- YAML job configs: conf/runs/*.yaml (one per dataset) over the engine defaults (spark_synth/conf/engines) ----
#: What each job (jobs/*.py) reads from a run config. A file may hold the union of these keys
#: (plus a free-text ``description``); a job ignores the keys it does not use.
JOB_KEYS = {
    "run": ("input", "schema", "engine", "engine_options", "epsilon", "delta", "rows", "output", "seed",
            "out_of_domain", "overwrite", "mlflow", "spark_profile", "dataset_id", "privacy_unit", "max_rows_per_unit"),
    "fit": ("input", "schema", "engine", "engine_options", "epsilon", "delta", "model", "out_of_domain", "mlflow",
            "spark_profile", "dataset_id", "privacy_unit", "max_rows_per_unit"),
    "sample": ("model", "rows", "output", "seed", "overwrite", "mlflow", "spark_profile"),
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
    merged.update({k: (v, "--engine-option" if k == "engine_options" else f"--{k.replace('_', '-')}")
                   for k, v in overrides.items() if v is not None})
    unknown = sorted(set(merged) - set(allowed))
    if unknown:
        raise ParameterError("overrides", f"among {sorted(allowed)}", unknown)
    origins: dict[str, str] = {}  # engine option -> the file (or flag) that set it
    if "engine" in JOB_KEYS[command]:
        engine = _check_value("engine", *merged.get("engine", (AUTO, "engine")))
        defaults_engine = _auto_choice(merged.get("schema", (None,))[0]) if engine == AUTO else engine
        defaults_file = conf.find("engines", defaults_engine) or f"engines/{defaults_engine}.yaml"
        defaults = load_engine_defaults(defaults_engine) if defaults_engine else {}
        if engine == AUTO:  # the chosen engine's run choices (budget, policy), never options: auto takes none
            defaults.pop("engine_options", None)
        for key, value in defaults.items():
            merged.setdefault(key, (value, f"{key} (in {defaults_file})"))
        if "engine_options" in merged:  # key by key: defaults < config file < command line
            layers = [(defaults.get("engine_options"), str(defaults_file)), (raw_config.get("engine_options"), str(config)),
                      (overrides.get("engine_options"), OPTION_FLAG)]
            options = {}
            for layer, source in layers:
                if layer is not None:
                    if not isinstance(layer, dict) or not all(isinstance(k, str) for k in layer):
                        raise _setting_error(_option_where(source), "a mapping of option name -> value", layer)
                    if engine == AUTO and layer:
                        raise _setting_error(_option_where(source), "no engine options with engine auto: name the engine "
                                             "they belong to (e.g. engine: fpt)", layer)
                    options.update(check_option_names_and_types(engine, dict(layer), source))
                    origins.update(dict.fromkeys(layer, source))
            merged["engine_options"] = (options, "engine_options")
    out = {}
    for key in JOB_KEYS[command]:
        if key in merged:
            out[key] = _check_value(key, *merged[key])
    missing = [k for k in _REQUIRED[command] if k not in out]
    if missing:
        raise ParameterError(missing[0], f"set in the config file or given as --{missing[0].replace('_', '-')}", None)
    if "epsilon" in out:
        try:
            from .privacy import PrivacyBudget

            PrivacyBudget(out["epsilon"], out["delta"])
        except ParameterError as exc:
            raise ParameterError(merged[exc.name][1], exc.allowed, exc.value) from None
    if "engine_options" in out:
        out["engine_options"] = check_engine_options(out.get("engine", AUTO), out["engine_options"],
                                                     OPTION_FLAG, origins=origins)
    return out


def _auto_choice(schema_path) -> str | None:
    """The engine ``auto`` picks for the schema at ``schema_path`` (public: its width), or None when
    the schema cannot be read here (its error comes later, in order)."""
    from .engines.choice import choose_engine
    from .schema import load_schema

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
        from .engines import ENGINES

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
    if key == "engine_options":
        if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
            raise ParameterError(name, "a mapping of option name -> value", value)
        return dict(value)
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


def parse_option_pairs(pairs, name: str = "--engine-option") -> dict:
    """``KEY=VALUE`` strings (CLI and jobs alike) → a dict, values parsed as YAML (numbers, lists, …)."""
    options = {}
    for pair in pairs or []:
        key, sep, value = str(pair).partition("=")
        if not sep or not key.strip():
            raise ParameterError(name, "KEY=VALUE (e.g. components=64)", pair)
        try:
            options[key.strip()] = yaml.safe_load(value)
        except yaml.YAMLError:
            raise ParameterError(f"{name} {key.strip()}", "a value written as YAML (number, word, list)", value) from None
    return options


#: Where engine options given on the command line (CLI and jobs) come from, in error messages.
OPTION_FLAG = "--engine-option"


def _setting_error(where: str, allowed: str, value) -> ParameterError:
    """A :class:`ParameterError` that reads ``WHERE: must be ALLOWED; got VALUE`` — e.g.
    ``engine_options.steps in conf/runs/x.yaml: must be a whole number; got 'x'``."""
    error = ParameterError(where, allowed, value)
    error.args = (f"{where}: must be {allowed}; got {value!r}",)
    return error


def _option_where(source: str, key: str | None = None) -> str:
    """``--engine-option`` or ``engine_options[.KEY] in FILE``: where an engine option was set."""
    if source == OPTION_FLAG:
        return OPTION_FLAG
    return f"engine_options{'.' + key if key else ''} in {source}"


def _option_error(exc: ParameterError, engine: str, source: str, origins: dict | None = None) -> ParameterError:
    """``exc`` (from an engine's option checks) restated with where the option was set: ``source``
    is :data:`OPTION_FLAG` or a config file, ``origins`` maps option names to their source when the
    options were merged from several."""
    from .engines.options import UnknownOptionError

    if isinstance(exc, UnknownOptionError):
        keys = exc.unknown
        source = (origins or {}).get(keys[0], source) if len(keys) == 1 else source
        return exc.located(_option_where(source, keys[0] if len(keys) == 1 else None))
    key = exc.name[len(engine) + 1:] if exc.name.startswith(f"{engine}.") else None
    source = (origins or {}).get(key, source)
    if source == OPTION_FLAG:
        return ParameterError(f"{exc.name} ({OPTION_FLAG})", exc.allowed, exc.value)
    return _setting_error(_option_where(source, key or exc.name), exc.allowed, exc.value)


def check_option_names_and_types(engine: str, options: dict, source: str) -> dict:
    """Names and types of ``options`` checked against the engine's config; ``source`` (a config file,
    or :data:`OPTION_FLAG`) is named in the error."""
    from .engines import ENGINES
    from .engines.options import checked_options

    try:
        return checked_options(engine, ENGINES[engine].config_class, options)
    except ParameterError as exc:
        raise _option_error(exc, engine, source) from None


def check_engine_options(engine: str, options: dict, source: str, origins: dict | None = None) -> dict:
    """``options`` after checking their names, types and ranges against the engine's config; the
    error also says where they came from (``source``: a config file or :data:`OPTION_FLAG`;
    ``origins``: option name -> its source, for options merged from several)."""
    from .engines import ENGINES, get_engine

    if engine == AUTO and not options:
        return options
    if engine not in ENGINES:
        raise ParameterError("engine", f"one of {sorted(ENGINES)}", engine)
    try:
        get_engine(engine, **options)
    except ParameterError as exc:
        raise _option_error(exc, engine, source, origins) from None
    return options
