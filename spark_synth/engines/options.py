"""Engine options: names and types checked against the engine's config dataclass (one place).

Used by the Python API, the CLI's ``--engine-option KEY=VALUE`` and the jobs alike, so an unknown
or mistyped option is the same :class:`~spark_synth.errors.ParameterError` everywhere.
"""

from __future__ import annotations

import types
import typing
from dataclasses import fields

from ..errors import ParameterError

_KINDS = {int: "a whole number", float: "a number", str: "a string", bool: "true or false", list: "a list", dict: "a mapping"}


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
        allowed = f"one of {sorted(known)}" if known else f"absent (engine '{engine}' takes no options)"
        raise ParameterError(f"{engine} option", allowed, unknown[0] if len(unknown) == 1 else unknown)
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
