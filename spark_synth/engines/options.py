"""Engine options: how they become the engine's typed config (its config dataclass), and where.

:func:`~spark_synth.engines.typed_config` turns options — a mapping from the Python API, the
CLI's and the jobs' ``--engine-option KEY=VALUE`` pairs, a YAML file's ``engine_options:`` — into
the engine's config (``FptConfig``, ``SpliceConfig``, …) once, at the edge: names and types are
checked here (:func:`engine_config`) against the dataclass's fields, ranges and combinations by the
dataclass itself (its ``__post_init__``).
From then on the typed config is passed along (``RunConfig``, ``Synthesizer``) and never checked
again. An error is the same :class:`~spark_synth.errors.ParameterError` everywhere, naming where
the option was set (``--engine-option``, ``engine_options.KEY in FILE``) when that is known.
"""

from __future__ import annotations

import difflib
import types
import typing
from dataclasses import MISSING, fields

from ..errors import ParameterError

_KINDS = {int: "a whole number", float: "a number", str: "a string", bool: "true or false", list: "a list", dict: "a mapping"}


class UnknownOptionError(ParameterError):
    """An option name the engine does not take. Its message names the closest known option ("did
    you mean ...?", :func:`difflib.get_close_matches`) when there is one, else lists the options;
    ``where`` (e.g. ``--engine-option`` or ``engine_options in run.yaml``) says where it was given."""

    def __init__(self, engine: str, unknown: list[str], known: list[str], where: str | None = None):
        self.engine, self.unknown, self.known, self.where = engine, list(unknown), sorted(known), where
        allowed = f"one of {self.known}" if known else f"absent (engine '{engine}' takes no options)"
        super().__init__(f"{engine} option", allowed, unknown[0] if len(unknown) == 1 else list(unknown))
        self.args = (self.describe(),)

    def located(self, where: str) -> "UnknownOptionError":
        """The same error, said to come from ``where``."""
        return UnknownOptionError(self.engine, self.unknown, self.known, where)

    def describe(self) -> str:
        parts = []
        for name in self.unknown:
            close = difflib.get_close_matches(name, self.known, n=1, cutoff=0.6) or \
                difflib.get_close_matches(name.lower(), self.known, n=1, cutoff=0.6)
            parts.append(f"'{name}' (did you mean '{close[0]}'?)" if close else f"'{name}'")
        if not self.known:
            text = f"engine '{self.engine}' takes no options; got {', '.join(parts)}"
        else:
            listed = ("" if all("did you mean" in part for part in parts)
                      else f"; its options are {', '.join(self.known)}")
            plural = "s" if len(parts) > 1 else ""
            text = f"no {self.engine} option{plural} {', '.join(parts)}{listed}"
        if self.where is None:
            return f"engine_options: {text}"
        return f"{self.where}: {text}"


#: Where engine options given on the command line (CLI and jobs) come from, in error messages.
OPTION_FLAG = "--engine-option"


def changed_options(config) -> dict:
    """The options of ``config`` that differ from its dataclass's defaults (what a user set), by name."""
    changed = {}
    for f in fields(config):
        value = getattr(config, f.name)
        default = f.default if f.default is not MISSING else (f.default_factory() if f.default_factory is not MISSING else MISSING)
        if default is MISSING or value != default:
            changed[f.name] = value
    return changed


def setting_error(where: str, allowed: str, value) -> ParameterError:
    """A :class:`ParameterError` that reads ``WHERE: must be ALLOWED; got VALUE`` — e.g.
    ``engine_options.steps in conf/runs/x.yaml: must be a whole number; got 'x'``."""
    error = ParameterError(where, allowed, value)
    error.args = (f"{where}: must be {allowed}; got {value!r}",)
    return error


def option_where(source: str | None, key: str | None = None) -> str:
    """``--engine-option`` or ``engine_options[.KEY] in FILE``: where an engine option was set."""
    if source == OPTION_FLAG:
        return OPTION_FLAG
    return f"engine_options{'.' + key if key else ''}" + (f" in {source}" if source else "")


def located(exc: ParameterError, engine: str, source: str | None, origins: dict | None = None) -> ParameterError:
    """``exc`` (from the engine's option checks) restated with where the option was set: ``source``
    is :data:`OPTION_FLAG` or a config file, ``origins`` maps option names to their source when the
    options were merged from several (``source`` then stands for an option found in none)."""
    origins = origins or {}
    if isinstance(exc, UnknownOptionError):
        keys = exc.unknown
        sources = {origins.get(key, source) for key in keys}
        return exc.located(option_where(sources.pop() if len(sources) == 1 else source, keys[0] if len(keys) == 1 else None))
    key = exc.name[len(engine) + 1:] if exc.name.startswith(f"{engine}.") else None
    source = origins.get(key, source)
    if source == OPTION_FLAG:
        return ParameterError(f"{exc.name} ({OPTION_FLAG})", exc.allowed, exc.value)
    return setting_error(option_where(source, key or exc.name), exc.allowed, exc.value)


def engine_config(engine: str, config_class: type, options: dict):
    """``config_class(**options)`` after checking every option's name and type (its own
    ``__post_init__`` checks ranges and combinations)."""
    return config_class(**checked_options(engine, config_class, options))


def checked_options(engine: str, config_class: type, options: dict) -> dict:
    """``options`` with every name known to ``config_class`` and every value of its field's type."""
    if not isinstance(options, dict) or not all(isinstance(k, str) for k in options):
        raise ParameterError(f"{engine} options", "a mapping of option name -> value", options)
    hints = typing.get_type_hints(config_class)
    known = [f.name for f in fields(config_class) if f.init]
    unknown = sorted(set(options) - set(known))
    if unknown:
        raise UnknownOptionError(engine, unknown, known)
    return {key: _check_type(f"{engine}.{key}", hints[key], value) for key, value in options.items()}


def _check_type(name: str, hint, value):
    allowed = typing.get_args(hint) if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union else (hint,)
    if value is None:
        if type(None) in allowed:
            return None
        raise ParameterError(name, _describe(allowed), value)
    for kind in allowed:
        kind = typing.get_origin(kind) or kind
        if kind is type(None):
            continue
        if kind is bool and isinstance(value, bool):
            return value
        if kind is int and isinstance(value, int) and not isinstance(value, bool):
            return value
        if kind is float and isinstance(value, (int, float)) and not isinstance(value, bool):
            return float(value) if not isinstance(value, int) else value
        if kind in (str, list, dict, tuple) and isinstance(value, kind):
            return value
        if kind not in _KINDS and kind is not tuple:  # a type this checker does not know: the dataclass checks it
            return value
    raise ParameterError(name, _describe(allowed), value)


def _describe(allowed) -> str:
    names = [_KINDS.get(typing.get_origin(k) or k, getattr(k, "__name__", str(k))) for k in allowed if k is not type(None)]
    text = " or ".join(names)
    return f"{text} (or null)" if type(None) in allowed else text
