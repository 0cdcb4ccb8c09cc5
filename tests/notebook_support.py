"""Run Databricks source-format notebooks locally: a parser and a small stand-in for ``dbutils``.

A notebook file starts with ``# Databricks notebook source``; cells are separated by
``# COMMAND ----------``; a cell whose lines all start with ``# MAGIC`` is a magic cell (only
``%md`` markdown is supported here, and skipped). Python cells run in order in one namespace
that holds what Databricks provides: ``spark``, ``dbutils`` (widgets, notebook.exit) and ``display``.
Widget values passed to :func:`run_notebook` play the role of job parameters: they override the
defaults the notebook declares; reading a widget the notebook never declared fails, as on Databricks.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

HEADER = "# Databricks notebook source"
SEPARATOR = "# COMMAND ----------"
MAGIC = "# MAGIC"


@dataclass(frozen=True)
class Cell:
    kind: str  # "python" or the magic command, e.g. "md"
    source: str


def parse_notebook(path: str | Path) -> list[Cell]:
    text = Path(path).read_text(encoding="utf-8")
    lines = text.splitlines()
    if not lines or lines[0] != HEADER:
        raise ValueError(f"{path}: first line must be {HEADER!r}")
    cells, current = [], []
    for line in lines[1:] + [SEPARATOR]:
        if line.strip() == SEPARATOR:
            body = "\n".join(current).strip("\n")
            if body.strip():
                cells.append(_cell(body, path))
            current = []
        else:
            current.append(line)
    return cells


def _cell(body: str, path) -> Cell:
    lines = [line for line in body.splitlines() if line.strip()]
    magic = [line.startswith(MAGIC) for line in lines]
    if not any(magic):
        return Cell("python", body)
    if not all(magic):
        raise ValueError(f"{path}: a cell mixes '# MAGIC' lines with code:\n{body}")
    first = lines[0][len(MAGIC):].strip()
    if not first.startswith("%"):
        raise ValueError(f"{path}: a magic cell must start with a %command; got {first!r}")
    return Cell(first[1:].split()[0], body)


class WidgetNotDefined(Exception):
    """As Databricks' InputWidgetNotDefined: the notebook read a widget it never declared."""


class NotebookExit(Exception):
    """Raised by ``dbutils.notebook.exit(value)``; carries the value."""

    def __init__(self, value: str):
        super().__init__(value)
        self.value = value


class _Widgets:
    def __init__(self, values: dict[str, str]):
        self._values = {k: str(v) for k, v in values.items()}
        self.declared: dict[str, dict] = {}

    def _declare(self, name: str, default: str, label: str | None, choices=None, kind: str = "text") -> None:
        if not isinstance(default, str):
            raise TypeError(f"widget {name!r}: defaultValue must be a string")
        if choices is not None:
            choices = [str(c) for c in choices]
            if default not in choices:
                raise ValueError(f"widget {name!r}: default {default!r} is not among its choices {choices}")
        self.declared[name] = {"default": default, "label": label, "choices": choices, "kind": kind}

    def text(self, name, defaultValue, label=None):  # noqa: N803 (Databricks' argument names)
        self._declare(name, defaultValue, label)

    def dropdown(self, name, defaultValue, choices, label=None):  # noqa: N803
        self._declare(name, defaultValue, label, list(choices), "dropdown")

    def combobox(self, name, defaultValue, choices, label=None):  # noqa: N803
        self._declare(name, defaultValue, label, None, "combobox")

    def get(self, name: str) -> str:
        if name not in self.declared:
            raise WidgetNotDefined(f"No input widget named {name} is defined")
        spec = self.declared[name]
        value = self._values.get(name, spec["default"])
        if spec["choices"] is not None and value not in spec["choices"]:
            raise ValueError(f"widget {name!r}: {value!r} is not among its choices {spec['choices']}")
        return value

    def getArgument(self, name: str, default: str | None = None) -> str:  # noqa: N802
        try:
            return self.get(name)
        except WidgetNotDefined:
            return default

    def remove(self, name: str) -> None:
        self.declared.pop(name, None)

    def removeAll(self) -> None:  # noqa: N802
        self.declared.clear()


class _Notebook:
    def exit(self, value: str = "") -> None:
        raise NotebookExit(str(value))


class DBUtils:
    """The parts of Databricks' ``dbutils`` the notebooks use."""

    def __init__(self, widgets: dict[str, str] | None = None):
        self.widgets = _Widgets(widgets or {})
        self.notebook = _Notebook()


def run_notebook(path: str | Path, spark, widgets: dict[str, str] | None = None) -> dict:
    """Execute the notebook's Python cells in order; returns the namespace (plus ``_displayed``).

    ``display(x)`` collects what it is given (a Spark DataFrame is collected to pandas).
    A ``dbutils.notebook.exit(value)`` stops the run; the value is ``namespace['_exit']``.
    """
    displayed: list = []

    def display(obj) -> None:
        displayed.append(obj.toPandas() if hasattr(obj, "toPandas") else obj)

    html: list[str] = []
    namespace: dict = {"__name__": "__main__", "spark": spark, "dbutils": DBUtils(widgets), "display": display,
                       "displayHTML": html.append, "_displayed": displayed, "_html": html}
    for index, cell in enumerate(parse_notebook(path)):
        if cell.kind == "md":
            continue
        if cell.kind != "python":
            raise NotImplementedError(f"{path}: magic %{cell.kind} cells cannot run locally")
        try:
            exec(compile(cell.source, f"{path}[cell {index}]", "exec"), namespace)  # noqa: S102
        except NotebookExit as stop:
            namespace["_exit"] = stop.value
            break
    return namespace
