"""The privacy argument relies on the code's shape: these tests keep it."""

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

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


# ---- the engine seam --------------------------------------------------------------------------------
def _module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _resolve(module: str, level: int, name: str | None, importer: str, is_package: bool) -> str:
    if level == 0:
        return module
    base = importer.split(".")
    base = base if is_package else base[:-1]
    base = base[: len(base) - (level - 1)]
    return ".".join([*base, *([module] if module else [])])


def _import_graph() -> dict[str, set[str]]:
    """spark_synth module → spark_synth modules it imports (at any level of the file)."""
    modules = {_module_name(p): p for p in PACKAGE.rglob("*.py")}
    graph: dict[str, set[str]] = {m: set() for m in modules}
    for name, path in modules.items():
        is_package = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text())):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(node.module or "", node.level, None, name, is_package)
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in modules else base for a in node.names]
            for target in targets:
                while target and target not in modules:  # `import a.b.c` names module a.b.c (or its package)
                    target = target.rpartition(".")[0]
                if target in modules and target != name:
                    graph[name].add(target)
    import spark_synth

    graph["spark_synth"] |= {f"spark_synth{m}" for m in spark_synth._LAZY.values()}  # PEP 562 lazy imports are imports too
    return graph


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    index, low, on_stack, stack, cycles, counter = {}, {}, set(), [], [], [0]

    def visit(v):  # Tarjan's strongly connected components
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on_stack.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                cycles.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return cycles


def test_no_import_cycle_in_spark_synth():
    graph = _import_graph()
    assert "spark_synth.engines.base" in graph["spark_synth.oracle"] and "spark_synth.pipeline" in graph["spark_synth"]
    assert not _cycles(graph), f"import cycles: {_cycles(graph)}"
    # the Spark task runner and the oracle implementation are wired by the pipeline only
    for wired in ("spark_synth.tasks", "spark_synth.oracle"):
        users = {m for m, targets in graph.items() if wired in targets}
        assert users <= {"spark_synth.pipeline"}, f"{wired} imported by {users}"
    # power check: the old `from . import __version__` in pipeline.py (package ↔ pipeline) is caught
    graph["spark_synth.pipeline"].add("spark_synth")
    assert any({"spark_synth", "spark_synth.pipeline"} <= set(c) for c in _cycles(graph))


def test_engines_do_not_introspect_the_oracle():
    """The oracle keeps exact answers in closures; engine code never reaches for them."""
    forbidden_attributes = {"__closure__", "__dict__", "__globals__", "__code__", "__self__", "cell_contents", "f_locals"}
    forbidden_modules = {"gc", "inspect", "ctypes", "sys"}
    for file in (PACKAGE / "engines").rglob("*.py"):
        tree = ast.parse(file.read_text())
        bad = {n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr in forbidden_attributes}
        bad |= {n.id for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) for n in [n.func]
                if n.id in ("vars", "globals", "locals")}
        bad |= {name.split(".")[0] for name in _imports(file) if name.split(".")[0] in forbidden_modules}
        assert not bad, f"{file} uses {bad}"


def test_exact_answers_never_leave_the_oracle():
    """An engine-side test double that tries every door to the exact answers finds none."""
    import numpy as np
    import pandas as pd
    import pytest

    from spark_synth.oracle import oracle_over_frame
    from spark_synth.privacy import PrivacyBudget, PrivacyFilter
    from spark_synth.queries import MarginalQuery
    from tests.helpers import tiny_frame, tiny_schema

    schema, frame = tiny_schema(), tiny_frame(500)
    exact = np.bincount(pd.Categorical(frame["colour"], categories=["red", "green", "blue"]).codes % 4, minlength=4)
    privacy_filter = PrivacyFilter(PrivacyBudget(1.0, 1e-9))
    oracle = oracle_over_frame(frame, schema, privacy_filter)
    query = MarginalQuery(("colour",))
    oracle.prepare([query])  # the exact histogram is now held inside the oracle
    found = []

    def holds_exact(value, depth=0):
        if isinstance(value, np.ndarray) and value.shape == (4,) and np.array_equal(np.asarray(value, dtype=np.int64), exact):
            return True
        if depth < 3 and isinstance(value, dict):
            return any(holds_exact(v, depth + 1) for v in value.values())
        if depth < 3 and isinstance(value, (list, tuple)):
            return any(holds_exact(v, depth + 1) for v in value)
        return False

    assert holds_exact({"leak": [exact.copy()]})  # the search would find a held copy
    with pytest.raises((AttributeError, TypeError)):
        vars(oracle)
    for name in ("_cache", "_exact", "cache", "exact", "answers", "_answers"):
        with pytest.raises(AttributeError):
            getattr(oracle, name)
    for name in dir(oracle):
        try:
            value = getattr(oracle, name)
        except Exception:
            continue
        if holds_exact(value):
            found.append(name)
    noisy = oracle.measure(query, privacy_filter.rho_total / 2)
    assert not holds_exact(noisy.values) and not holds_exact(list(vars(noisy).values()))
    assert not holds_exact(privacy_filter.report().to_dict())
    assert not found, f"exact answers reachable through {found}"


# ---- lazy engines: PyTorch only when an engine that needs it is asked for ------------------------------
REPO_ROOT = PACKAGE.parent


def _fresh_python(code: str, env: dict | None = None, **kwargs) -> subprocess.CompletedProcess:
    """Run ``code`` in a new interpreter (this process has imported torch through other tests). Its
    environment is this one's without a Spark gateway or MLflow store of the test session, plus ``env``."""
    inherited = {k: v for k, v in os.environ.items()
                 if not k.startswith("PYSPARK_GATEWAY") and k != "MLFLOW_TRACKING_URI"}
    path = os.pathsep.join(filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    env = {**inherited, **(env or {}), "PYTHONPATH": path}
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, **kwargs)


def test_cli_import_does_not_import_torch():
    done = _fresh_python("import spark_synth.cli, sys; assert 'torch' not in sys.modules, 'torch imported'")
    assert done.returncode == 0, done.stderr


def test_engine_registry_loads_torch_engines_on_first_use_only():
    code = """
import sys
import spark_synth
from spark_synth import RunConfig, Synthesizer
from spark_synth.commands import run, fit_and_save, load_and_sample
from spark_synth.engines import typed_config
from spark_synth.engines import ENGINES, get_engine, model_class
import spark_synth.io, spark_synth.sample, spark_synth.track, spark_synth.track.pyfunc
assert list(ENGINES)[:3] == ['independent', 'splice', 'fpt'] and 'fpt' in ENGINES and 'magic' not in ENGINES
RunConfig(input='in.csv', schema='s.json', engine='fpt', epsilon=1.0, delta=1e-9, rows=5, output='out.csv')
Synthesizer('independent', epsilon=1.0, delta=1e-9)
model_class('independent')
assert 'torch' not in sys.modules, 'torch imported before an engine that needs it was asked for'
assert 'spark_synth.engines.fpt' not in sys.modules and not ENGINES.is_loaded('fpt')
typed_config('fpt', {'max_way': 3}, source='--engine-option')
from spark_synth.engines import FptEngine
assert ENGINES['fpt'] is FptEngine and model_class('fpt') is FptEngine.model_class and ENGINES.is_loaded('fpt')
assert 'torch' in sys.modules
"""
    done = _fresh_python(code)
    assert done.returncode == 0, done.stderr


def test_lazy_registration_is_checked():
    from spark_synth.engines import ENGINES, register_engine
    from spark_synth.errors import InternalError

    assert register_engine("fpt", "spark_synth.engines.fpt:FptEngine") == "spark_synth.engines.fpt:FptEngine"
    with pytest.raises(InternalError, match="two engines"):
        register_engine("fpt", "spark_synth.engines.splice:SpliceEngine")
    register_engine("misnamed", "spark_synth.engines.splice:SpliceEngine")
    try:
        with pytest.raises(InternalError, match="not an Engine subclass called 'misnamed'"):
            ENGINES["misnamed"]
    finally:
        del ENGINES["misnamed"]
    register_engine("missing", "spark_synth.engines.no_such_module:Engine")
    try:
        with pytest.raises(InternalError, match="could not be loaded"):
            ENGINES["missing"]
    finally:
        assert ENGINES.pop("missing") == "spark_synth.engines.no_such_module:Engine"  # unregistered without loading
    assert "missing" not in ENGINES and "misnamed" not in ENGINES


@pytest.mark.spark  # starts its own local Spark (in the subprocess): about half a minute
def test_cli_run_with_the_independent_engine_does_not_import_torch(tmp_path):
    """The whole `spark-synth run --engine independent` path (Spark, MLflow and pyfunc model included)."""
    data = PACKAGE / "data"
    argv = ["run", "--input", str(data / "adult_sample.csv"), "--schema", str(data / "adult_sample.schema.json"),
            "--engine", "independent", "--epsilon", "1", "--delta", "1e-9", "--rows", "20",
            "--output", str(tmp_path / "out.parquet"), "--seed", "1"]
    code = (f"import sys\nfrom spark_synth.cli import main\ncode = main({argv!r})\n"
            "assert code == 0, code\nassert 'torch' not in sys.modules, 'torch imported'\n")
    done = _fresh_python(code, env={"SPARK_SYNTH_HOME": str(tmp_path / "home")}, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-4000:]
    assert (tmp_path / "out.parquet").is_dir()
