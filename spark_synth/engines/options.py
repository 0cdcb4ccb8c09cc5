"""Engine options: names and types checked against the engine's config dataclass (one place).

Used by the Python API, the CLI's ``--engine-option KEY=VALUE`` and the jobs alike, so an unknown
or mistyped option is the same :class:`~spark_synth.errors.ParameterError` everywhere.
"""

from __future__ import annotations

import difflib
import types
import typing
from dataclasses import fields

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
