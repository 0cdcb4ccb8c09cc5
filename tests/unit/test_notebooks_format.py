"""The notebooks are valid Databricks source files that use only the public API (no Spark here)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import spark_synth
import spark_synth.evaluate
import spark_synth.track
from tests.notebook_support import DBUtils, WidgetNotDefined, parse_notebook

NOTEBOOKS = sorted((Path(__file__).resolve().parents[2] / "notebooks").rglob("*.py"))
PUBLIC = {"spark_synth": set(spark_synth.__all__), "spark_synth.track": set(spark_synth.track.__all__),
          "spark_synth.engines": {"ENGINES"}, "spark_synth.evaluate": set(spark_synth.evaluate.__all__)}
WIDGETS = {"table", "schema", "epsilon", "delta", "engine", "rows"}


def test_expected_notebooks_exist():
    root = Path(__file__).resolve().parents[2] / "notebooks"
    names = {str(p.relative_to(root)) for p in NOTEBOOKS}
    assert {"quickstart.py", "release.py", "engines/independent.py", "engines/splice.py"} <= names


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_databricks_source_format_widgets_and_public_api_only(path):
    cells = parse_notebook(path)
    assert cells[0].kind == "md" and {c.kind for c in cells} == {"md", "python"}
    code = "\n".join(c.source for c in cells if c.kind == "python")
    tree = ast.parse(code)
    declared = {node.args[0].value for node in ast.walk(tree)
                if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in ("text", "dropdown", "combobox") and isinstance(node.args[0], ast.Constant)}
    assert WIDGETS <= declared
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            assert not any(a.name.startswith("spark_synth") for a in node.names), "use `from spark_synth import …`"
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("spark_synth"):
            assert node.module in PUBLIC, node.module
            assert {a.name for a in node.names} <= PUBLIC[node.module], (node.module, [a.name for a in node.names])
        elif isinstance(node, ast.Attribute):
            assert not node.attr.startswith("_") or node.attr.startswith("__"), f"private attribute {node.attr}"


def test_parser_rejects_non_notebooks_and_mixed_cells(tmp_path):
    plain = tmp_path / "plain.py"
    plain.write_text("print(1)\n")
    with pytest.raises(ValueError, match="first line"):
        parse_notebook(plain)
    mixed = tmp_path / "mixed.py"
    mixed.write_text("# Databricks notebook source\n# MAGIC %md\nx = 1\n")
    with pytest.raises(ValueError, match="mixes"):
        parse_notebook(mixed)


def test_dbutils_stand_in_behaves_like_databricks():
    dbutils = DBUtils({"rows": "5", "engine": "nope"})
    dbutils.widgets.text("rows", "10", "Rows")
    dbutils.widgets.dropdown("engine", "independent", ["independent"], "Engine")
    assert dbutils.widgets.get("rows") == "5"  # a job parameter overrides the default
    with pytest.raises(ValueError, match="not among its choices"):
        dbutils.widgets.get("engine")
    with pytest.raises(WidgetNotDefined):
        dbutils.widgets.get("epsilon")
    with pytest.raises(ValueError, match="not among its choices"):
        dbutils.widgets.dropdown("bad", "x", ["y"])
