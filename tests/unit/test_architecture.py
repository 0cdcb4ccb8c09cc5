"""The privacy argument relies on the code's shape: these tests keep it."""

import ast
import subprocess
import sys
from pathlib import Path

import spark_synth

PACKAGE = Path(spark_synth.__file__).resolve().parent


def _imports(path: Path) -> set[str]:
    names = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            names.add(("." * node.level) + (node.module or ""))
    return names


def test_privacy_and_engines_never_import_pyspark_statically():
    for layer in ("privacy", "engines"):
        for file in (PACKAGE / layer).rglob("*.py"):
            bad = {n for n in _imports(file) if n.startswith("pyspark")}
            assert not bad, f"{file} imports {bad}"


def test_engines_do_not_reach_rows_or_storage():
    for file in (PACKAGE / "engines").rglob("*.py"):
        bad = {n for n in _imports(file) if any(x in n for x in ("measure", ".io", "sample", "pipeline"))}
        assert not bad, f"{file} imports {bad}"


def test_privacy_and_engines_import_without_pyspark_at_runtime():
    code = "import sys, spark_synth.privacy, spark_synth.engines; print(any(m.startswith('pyspark') for m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_no_numpy_or_torch_randomness_in_privacy_layer():
    for file in (PACKAGE / "privacy").rglob("*.py"):
        bad = {n for n in _imports(file) if n.split(".")[0] in ("random", "secrets", "torch") or "numpy.random" in n}
        assert not bad, f"{file} imports {bad} (privacy noise must come from OpenDP)"
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Attribute) and node.attr == "random":
                assert not (isinstance(node.value, ast.Name) and node.value.id in ("np", "numpy")), f"{file} uses np.random"


def test_public_surface_is_exact():
    assert sorted(spark_synth.__all__) == sorted(
        [
            "__version__", "Synthesizer", "run", "RunConfig", "load_schema", "Schema", "Column", "ColumnType",
            "PrivacyBudget", "NEIGHBOURING_RELATION", "get_spark", "SparkSynthError", "UserInputError",
            "ParameterError", "SchemaError", "DataValidationError", "OutputError", "NotFittedError",
            "BudgetExhausted", "InternalError",
        ]
    )
    for name in spark_synth.__all__:
        assert hasattr(spark_synth, name)
