"""Engines: fit a generative model from noisy measurements only. Never imports pyspark.

An engine is a folder (or module) under ``engines/`` plus one :func:`register_engine` line below;
see ``docs/engines.md``. Shipped engines other than ``independent`` are registered by name as
``"module:attribute"`` and imported only when first asked for (``ENGINES[name]``, :func:`get_engine`,
:func:`model_class`): ``fpt`` and ``splice`` import PyTorch, which every CLI call and every Spark
Python worker would otherwise pay for.
"""

from __future__ import annotations

import dataclasses
import importlib
import importlib.util
from collections.abc import Iterator, MutableMapping

from ..errors import InternalError, ParameterError, UserInputError
from .base import Engine, FittedModel, LocalTaskRunner, MeasurementOracle, TaskRunner
from .independent import IndependentEngine, IndependentModel
from .options import engine_config, located

#: The shipped engines imported on first use: name → (package, class prefix); the package exports
#: ``<prefix>Engine`` and ``<prefix>Model``, which are importable from here too (loaded on first access).
_SHIPPED = {
    "splice": ("spark_synth.engines.splice", "Splice"),
    "fpt": ("spark_synth.engines.fpt", "Fpt"),
    "dgm": ("spark_synth.engines.dgm", "Dgm"),
}
_LAZY_ATTRIBUTES = {prefix + kind: f"{package}:{prefix}{kind}" for package, prefix in _SHIPPED.values() for kind in ("Engine", "Model")}


def _import_target(target: str):
    module, _, attribute = target.partition(":")
    return getattr(importlib.import_module(module), attribute)


class EngineRegistry(MutableMapping):
    """Engine name → engine class. An entry may be a ``"module:attribute"`` string, imported (and
    checked) the first time the name is looked up; membership, iteration and ``len`` never import."""

    def __init__(self) -> None:
        self._entries: dict[str, type[Engine] | str] = {}

    def __getitem__(self, name: str) -> type[Engine]:
        entry = self._entries[name]
        if isinstance(entry, str):
            try:
                cls = _import_target(entry)
            except ImportError as exc:
                raise InternalError(f"engine {name!r} could not be loaded from {entry!r}: {exc}") from exc
            if not (isinstance(cls, type) and issubclass(cls, Engine)) or getattr(cls, "name", None) != name:
                raise InternalError(f"{entry!r} is not an Engine subclass called {name!r}")
            if self._entries.get(name) == entry:
                self._entries[name] = cls
            return cls
        return entry

    def __setitem__(self, name: str, cls: type[Engine] | str) -> None:
        self._entries[name] = cls

    def __delitem__(self, name: str) -> None:
        del self._entries[name]

    def pop(self, name: str, *default):
        """Unregister ``name``; returns its class — or its ``"module:attribute"`` when never loaded (not imported)."""
        if name not in self._entries:
            if default:
                return default[0]
            raise KeyError(name)
        return self._entries.pop(name)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entries))

    def __len__(self) -> int:
        return len(self._entries)

    def is_loaded(self, name: str) -> bool:
        """Whether engine ``name``'s class has been imported (False for a name still registered lazily)."""
        return not isinstance(self._entries.get(name, ""), str)

    def __repr__(self) -> str:
        shown = {name: entry if isinstance(entry, str) else f"{entry.__module__}.{entry.__qualname__}"
                 for name, entry in self._entries.items()}
        return f"EngineRegistry({shown})"


#: Engine name → class (lazily imported: see :class:`EngineRegistry`).
ENGINES: EngineRegistry = EngineRegistry()


def register_engine(cls: type[Engine] | str, target: str | None = None):
    """Make an engine available by name (CLI ``--engine``, configs, saved models).

    ``register_engine(EngineClass)`` registers a class by its ``name`` (usable as a decorator);
    ``register_engine("name", "package.module:EngineClass")`` registers it lazily: the module is
    imported when the engine is first asked for.
    """
    if isinstance(cls, str):
        name = cls
        if not name or not isinstance(target, str) or ":" not in target:
            raise InternalError(f"register_engine({name!r}, {target!r}): give a name and a 'module:attribute' target")
        existing = ENGINES._entries.get(name)
        if existing is None or existing == target:
            ENGINES[name] = target
        elif not (isinstance(existing, type) and existing is _import_target(target)):
            raise InternalError(f"two engines are called {name!r}")
        return target
    if target is not None:
        raise InternalError("register_engine(EngineClass) takes no target")
    if not (isinstance(cls, type) and issubclass(cls, Engine)) or not getattr(cls, "name", None):
        raise InternalError(f"{cls!r} is not an Engine subclass with a name")
    if cls.name in ENGINES and ENGINES[cls.name] is not cls:
        raise InternalError(f"two engines are called {cls.name!r}")
    ENGINES[cls.name] = cls
    return cls


register_engine(IndependentEngine)
for _name, (_package, _prefix) in _SHIPPED.items():
    register_engine(_name, f"{_package}:{_prefix}Engine")


def engine_class(name: str) -> type[Engine]:
    """The class of the engine called ``name``: a registered engine (not ``auto``) whose optional
    dependencies are installed."""
    if name == "auto":
        raise ParameterError("engine", "a named engine here: 'auto' is resolved from a schema by "
                                       "spark_synth.engines.choice.choose_engine (the CLI and jobs do it)", name)
    if name not in ENGINES:
        raise ParameterError("engine", f"one of {sorted(ENGINES)}", name)
    cls = ENGINES[name]
    for module, extra in cls.requires:
        if importlib.util.find_spec(module) is None:
            raise UserInputError(f"engine '{name}' needs {module}, which is not installed here; install the extra: "
                                 f"pip install 'spark-synth[{extra}]' (or pick --engine independent)")
    return cls


def typed_config(engine: str, options=None, *, source: str | None = None, origins: dict | None = None):
    """The typed config of engine ``engine`` (its ``config_class``) from ``options``: None (the
    engine's defaults), a mapping of option name -> value (checked here, once), or already a config
    of that engine (returned as it is: it was checked when it was made). The one place options
    become a config: the Python API, the CLI and the jobs call it where the options are given.

    ``source`` says where the options were set — ``--engine-option`` or a config file; None for the
    Python API — and ``origins`` maps option names to their source when they were merged from
    several (a job's engine defaults, run config and command line); errors name them.
    """
    config_class = engine_class(engine).config_class
    if isinstance(options, config_class):
        return options
    if options is not None and not isinstance(options, dict):
        raise ParameterError("engine_options", f"a mapping of option name -> value, or a {config_class.__name__}", options)
    try:
        return engine_config(engine, config_class, options or {})
    except ParameterError as exc:
        if source is None and not origins:
            raise
        raise located(exc, engine, source, origins) from None


def get_engine(name: str, config=None, /, **options) -> Engine:
    """The engine called ``name``, built once: from ``config``, its typed config (made by
    :func:`typed_config`, so checked already: not checked again), or from keyword ``options``
    (names and types checked here, ranges by the config dataclass)."""
    cls = engine_class(name)
    if config is not None and cls.__init__ is not Engine.__init__ and isinstance(config, cls.config_class) and not options:
        return cls(**{f.name: getattr(config, f.name) for f in dataclasses.fields(config)})  # an __init__ of its own
    return cls(config, **options)


def model_class(name: str) -> type[FittedModel]:
    if name not in ENGINES:
        raise ParameterError("engine", f"one of {sorted(ENGINES)}", name)
    return ENGINES[name].model_class


def __getattr__(name: str):
    """``from spark_synth.engines import SpliceEngine`` (etc.) still works: imported on first access."""
    if name in _LAZY_ATTRIBUTES:
        return _import_target(_LAZY_ATTRIBUTES[name])  # cached by the import system after the first time
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = ["Engine", "FittedModel", "MeasurementOracle", "TaskRunner", "LocalTaskRunner", "ENGINES", "register_engine",
           "get_engine", "engine_class", "typed_config", "model_class", "IndependentEngine", "IndependentModel",
           "SpliceEngine", "SpliceModel", "FptEngine", "FptModel"]
