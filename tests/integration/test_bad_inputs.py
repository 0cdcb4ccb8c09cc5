"""Issue 12: every bad input the CLI can be given fails the same way.

Each case runs ``spark-synth run`` (a few ``fit`` or ``sample``; in-process, on the shared Spark
session, without MLflow) and must: exit with code 2; print nothing on stdout and exactly ONE line ``spark-synth: error: …`` on
stderr that names the problem (and says how to fix it), with no Java/Py4J/traceback text; and
leave the file system exactly as it was (nothing at the output path, no hidden staging folder).
A few cases run through a real subprocess as well, since that is how users run it.
"""

from __future__ import annotations

import codecs
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

import pytest

from tests.helpers import error_line

from spark_synth.cli import main
from spark_synth.config import MAX_ROWS, MAX_SEED

pytestmark = pytest.mark.spark

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA = REPO_ROOT / "spark_synth" / "data" / "adult_sample.csv"
SCHEMA = REPO_ROOT / "spark_synth" / "data" / "adult_sample.schema.json"
#: Text that must never reach the user: Spark/Java internals or a Python traceback.
FORBIDDEN = ("Traceback", "Py4J", "py4j", "AnalysisException", "java.", "org.apache", "SparkException",
             "An error occurred while calling", "SQLSTATE")
TINY_SCHEMA = {"columns": [{"name": "age", "type": "integer", "min": 0, "max": 99},
                           {"name": "colour", "type": "categorical", "categories": ["red", "green", "blue"]}]}
TINY_ROWS = "age,colour\n31,red\n45,blue\n22,green\n"
WORKCLASS_SECTOR = {"Private": "private", "Self-emp-not-inc": "self-employed", "Self-emp-inc": "self-employed",
                    "Federal-gov": "government", "Local-gov": "government", "State-gov": "government",
                    "Without-pay": "not paid", "Never-worked": "not paid"}


class Workspace:
    """A case's folder: inputs, schemas and outputs are made here; it is compared before/after."""

    def __init__(self, root: Path, spark=None):
        self.root, self.spark = root, spark
        self.args = {"--input": str(DATA), "--schema": str(SCHEMA), "--epsilon": "1", "--delta": "1e-9",
                     "--rows": "10", "--output": str(root / "out" / "synthetic.parquet")}
        self.flags = ["--no-mlflow"]
        self.command = "run"
        (root / "out").mkdir(parents=True)

    def path(self, name: str) -> Path:
        return self.root / name

    def file(self, name: str, content: str | bytes, encoding: str = "utf-8") -> str:
        path = self.path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(content if isinstance(content, bytes) else content.encode(encoding))
        return str(path)

    def folder(self, name: str) -> str:
        self.path(name).mkdir(parents=True)
        return str(self.path(name))

    def tiny_input(self, rows: str = TINY_ROWS, schema: dict | None = None, name: str = "tiny.csv") -> None:
        """A three-row CSV and its two-column schema (fast to read and measure)."""
        self.args["--input"] = self.file(name, rows)
        self.args["--schema"] = self.file("tiny.schema.json", json.dumps(schema or TINY_SCHEMA))

    def schema(self, edit: Callable[[dict], None] | None = None, text: str | None = None, name: str = "schema.json") -> None:
        """``--schema``: the adult sample's schema changed by ``edit``, or the raw ``text``."""
        if text is None:
            raw = json.loads(SCHEMA.read_text())
            edit(raw)
            text = json.dumps(raw)
        self.args["--schema"] = self.file(name, text)

    def argv(self) -> list[str]:
        args = [item for key, value in self.args.items() if value is not None for item in (key, value)]
        return [self.command, *args, *self.flags]


def _column(raw: dict, name: str) -> dict:
    return next(c for c in raw["columns"] if c["name"] == name)


@dataclass(frozen=True)
class Case:
    """``setup(ws)`` makes the bad input; the error line must contain every one of ``expect``."""

    setup: Callable[[Workspace], None]
    expect: tuple[str, ...]
    marks: tuple = field(default=())


def _set(**args) -> Callable[[Workspace], None]:
    """A case that only changes CLI arguments (``rows="0"`` sets ``--rows 0``; ``None`` drops it)."""

    def setup(ws: Workspace) -> None:
        for key, value in args.items():
            ws.args["--" + key.replace("_", "-")] = value

    return setup


def _engine_option(engine: str, *pairs: str) -> Callable[[Workspace], None]:
    def setup(ws: Workspace) -> None:
        ws.args["--engine"] = engine
        ws.flags += [item for pair in pairs for item in ("--engine-option", pair)]

    return setup


# ---- inputs ------------------------------------------------------------------------------------------
def _missing_input(ws):
    ws.args["--input"] = str(ws.path("nope.csv"))


def _empty_file(ws):
    ws.tiny_input(rows="")


def _header_only(ws):
    ws.tiny_input(rows="age,colour\n")


def _binary_as_csv(ws):
    ws.args["--input"] = ws.file("photo.csv", bytes(range(256)) * 16)


def _utf16_csv(ws):
    ws.tiny_input()
    ws.args["--input"] = ws.file("utf16.csv", TINY_ROWS, encoding="utf-16")


def _latin1_header(ws):
    schema = {"columns": [{"name": "année", "type": "integer", "min": 1900, "max": 2100},
                          {"name": "colour", "type": "categorical", "categories": ["red", "green"]}]}
    ws.tiny_input(schema=schema)
    ws.args["--input"] = ws.file("latin1.csv", "année,colour\n1999,red\n2001,green\n", encoding="latin-1")


def _latin1_values(ws):
    schema = {"columns": [{"name": "age", "type": "integer", "min": 0, "max": 99},
                          {"name": "city", "type": "categorical", "categories": ["Zürich", "Genève"]}]}
    ws.tiny_input(schema=schema)
    ws.args["--input"] = ws.file("latin1_values.csv", "age,city\n31,Zürich\n45,Genève\n", encoding="latin-1")
    ws.args["--out-of-domain"] = "error"


def _yes_no(n: int = 6000) -> list[str]:
    return ["yes" if i % 3 else "no" for i in range(n)]


def _wrong_type_column(ws):
    """A yes/no column declared integer: under clip every value is unreadable, so a null (issue 45)."""
    schema = {"columns": [{"name": "age", "type": "integer", "min": 0, "max": 99},
                          {"name": "smoker", "type": "integer", "min": 0, "max": 1}]}
    ws.tiny_input(rows="age,smoker\n" + "".join(f"{20 + i % 60},{v}\n" for i, v in enumerate(_yes_no())), schema=schema)


def _latin1_values_clipped(ws):
    """Latin-1 text under clip: every accented category is unknown, so a null (issue 45)."""
    schema = {"columns": [{"name": "age", "type": "integer", "min": 0, "max": 99},
                          {"name": "city", "type": "categorical", "categories": ["Zürich", "Genève"]}]}
    ws.tiny_input(schema=schema)
    rows = "age,city\n" + "".join(f"{20 + i % 60},{'Zürich' if i % 2 else 'Genève'}\n" for i in range(6000))
    ws.args["--input"] = ws.file("latin1_values.csv", rows, encoding="latin-1")


def _duplicate_columns(ws):
    ws.tiny_input(rows="age,colour,age\n31,red,32\n")


def _duplicate_columns_case(ws):
    ws.tiny_input(rows="age,colour,Colour\n31,red,red\n")


def _unnamed_column(ws):
    ws.tiny_input(rows="age,,colour\n31,x,red\n")


def _semicolon_csv(ws):
    ws.tiny_input(rows="age;colour\n31;red\n")


def _missing_schema_column(ws):
    ws.tiny_input(rows="age\n31\n45\n")


def _extra_data_column(ws):
    ws.tiny_input(rows="age,colour,secret\n31,red,x\n")


def _mixed_folder(ws):
    folder = ws.folder("mixed")
    ws.file("mixed/part-0.csv", TINY_ROWS)
    ws.file("mixed/notes.txt", "read me\n")
    ws.tiny_input()
    ws.args["--input"] = folder


def _empty_folder_as_delta(ws):
    ws.args["--input"] = ws.folder("empty.delta")


def _empty_folder(ws):
    ws.args["--input"] = ws.folder("empty")


def _parquet_folder_as_delta(ws):
    target = str(ws.path("table.delta"))
    ws.spark.createDataFrame([(31, "red")], "age long, colour string").write.parquet(target)
    ws.tiny_input()
    ws.args["--input"] = target


def _json_folder(ws):
    ws.folder("jsons")
    ws.file("jsons/part-0.json", '{"age": 31, "colour": "red"}\n')
    ws.args["--input"] = str(ws.path("jsons"))


def _csv_named_parquet(ws):
    ws.tiny_input()
    ws.args["--input"] = ws.file("actually_csv.parquet", TINY_ROWS)


def _unknown_extension(ws):
    ws.args["--input"] = ws.file("data.json", '{"age": 31}\n')


# ---- outputs -----------------------------------------------------------------------------------------
def _output_exists(ws):
    ws.file("out/synthetic.parquet/part-0.parquet", b"PAR1")


def _output_file_exists(ws):
    ws.args["--output"] = ws.file("out/synthetic.csv", "age\n1\n")


def _output_parent_is_file(ws):
    ws.file("blocker", "")
    ws.args["--output"] = str(ws.path("blocker") / "synthetic.parquet")


def _output_file_for_delta(ws):
    ws.args["--output"] = ws.file("out/table", "not a folder\n")
    ws.flags.append("--overwrite")


def _output_is_input(ws):
    ws.tiny_input()
    ws.args["--output"] = ws.args["--input"]
    ws.flags.append("--overwrite")


def _output_inside_input(ws):
    folder = ws.folder("csvs")
    ws.file("csvs/part-0.csv", TINY_ROWS)
    ws.tiny_input()
    ws.args["--input"] = folder
    ws.args["--output"] = folder + "/synthetic.parquet"


def _output_delta_over_foreign_folder(ws):
    ws.file("out/table/notes.txt", "not a Delta table\n")
    ws.args["--output"] = str(ws.path("out/table"))
    ws.flags.append("--overwrite")


def _fit_model_inside_input(ws):
    """``fit --model`` inside the input folder, the input given by a bare (relative) name."""
    Path("csvs").mkdir()  # in the case's working directory
    Path("csvs", "part-0.csv").write_text(TINY_ROWS)
    ws.tiny_input()
    ws.command = "fit"
    ws.args.update({"--input": "csvs", "--rows": None, "--output": None, "--model": "csvs/model"})


def _sample_output_is_model(ws):
    """``sample --output`` onto the saved model's own folder, with --overwrite."""
    from spark_synth.commands import fit_and_save

    # 2,100 rows: on the three tiny rows a column's noisy counts can all fall below the floor, and the
    # fit is then refused (its output would be all null) before the case under test is reached
    ws.tiny_input(rows=TINY_ROWS + TINY_ROWS.split("\n", 1)[1] * 699)
    model = str(ws.path("model"))
    fit_and_save(input=ws.args["--input"], schema=ws.args["--schema"], engine="independent", epsilon=1.0,
                 delta=1e-9, model=model, mlflow=False, spark=ws.spark)
    ws.command = "sample"
    ws.args = {"--model": model, "--rows": "10", "--output": model}
    ws.flags = ["--overwrite"]  # `sample` has no MLflow flag


def _output_unwritable(ws):
    locked = ws.folder("locked")
    os.chmod(locked, 0o555)
    ws.args["--output"] = locked + "/synthetic.parquet"


# ---- schemas -----------------------------------------------------------------------------------------
def _hierarchy(edit):
    def setup(ws):
        def change(raw):
            level = {"name": "sector", "parents": dict(WORKCLASS_SECTOR)}
            edit(level)
            _column(raw, "workclass")["hierarchy"] = [level]

        ws.schema(change)

    return setup


def _bound(name, key, value):
    return lambda ws: ws.schema(lambda raw: _column(raw, name).update({key: value}))


NOT_ROOT = pytest.mark.skipif(hasattr(os, "geteuid") and os.geteuid() == 0, reason="root can write anywhere")

CASES = {
    # inputs
    "input-missing-file": Case(_missing_input, ("nope.csv", "does not exist")),
    "input-empty-file": Case(_empty_file, ("empty file", "header row")),
    "input-header-only": Case(_header_only, ("no rows",)),
    "input-binary-as-csv": Case(_binary_as_csv, ("photo.csv", "binary")),
    "input-utf16-csv": Case(_utf16_csv, ("UTF-16", "UTF-8")),
    "input-latin1-header": Case(_latin1_header, ("not UTF-8", "Latin-1")),
    "input-latin1-values-refused": Case(_latin1_values, ("['city']", "outside their declared domain")),
    "input-wrong-type-all-null": Case(_wrong_type_column, ("column(s) 'smoker' ", "% null (integer in [0, 1])", "declared type",
                                                           "Nothing was written")),
    "input-latin1-values-clipped-all-null": Case(_latin1_values_clipped, ("column(s) 'city' ", "% null (categorical", "encoding")),
    "input-duplicate-columns": Case(_duplicate_columns, ("duplicate column names ['age']", "each column appears once")),
    "input-duplicate-columns-ignoring-case": Case(_duplicate_columns_case, ("duplicate column names", "Colour")),
    "input-unnamed-column": Case(_unnamed_column, ("unnamed column", "column 2")),
    "input-semicolon-separated": Case(_semicolon_csv, ("';'-separated", "comma-separated")),
    "input-missing-schema-column": Case(_missing_schema_column, ("missing columns ['colour']", "add them to the data")),
    "input-extra-column": Case(_extra_data_column, ("extra columns ['secret']",)),
    "input-mixed-folder": Case(_mixed_folder, ("several formats (.csv, .txt)", "one format")),
    "input-empty-folder-as-delta": Case(_empty_folder_as_delta, ("not a Delta table", "_delta_log")),
    "input-empty-folder": Case(_empty_folder, ("empty folder", "_delta_log")),
    "input-parquet-folder-as-delta": Case(_parquet_folder_as_delta, ("not a Delta table", ".parquet files")),
    "input-folder-of-json": Case(_json_folder, (".json files", "CSV or Parquet")),
    "input-csv-named-parquet": Case(_csv_named_parquet, ("not valid Parquet", "real format")),
    "input-unknown-extension": Case(_unknown_extension, ("cannot tell the format", ".csv or .parquet")),
    "input-unknown-table": Case(_set(input="no_such_db.no_such_table"), ("no_such_db.no_such_table", "catalog")),
    "input-unknown-catalog": Case(_set(input="no_cat.no_db.no_table"), ("no_cat.no_db.no_table", "catalog")),
    "input-delta-path-identifier": Case(_set(input="delta.`/data/adult`"),
                                        ("names a Delta table by its path", "pass the path itself ('/data/adult')")),
    # schemas
    "schema-missing-file": Case(lambda ws: ws.args.update({"--schema": str(ws.path("nope.json"))}), ("does not exist",)),
    "schema-is-folder": Case(lambda ws: ws.args.update({"--schema": ws.folder("schemas")}), ("is a folder",)),
    "schema-json-syntax": Case(lambda ws: ws.schema(text='{"columns": [\n  {"name": "age",}\n]}'),
                               ("not valid JSON", "line 2", "fix the syntax")),
    "schema-yaml-syntax": Case(lambda ws: ws.schema(text="columns:\n  - name: age\n   type: integer\n", name="s.yaml"),
                               ("not valid YAML", "line 3", "fix the syntax")),
    "schema-not-utf8": Case(lambda ws: ws.args.update({"--schema": ws.file("s.json", '{"columns": ["é"]}', "latin-1")}),
                            ("not UTF-8", "save it as UTF-8")),
    "schema-unknown-type": Case(_bound("age", "type", "datetime"), ("unknown type 'datetime'", "allowed types")),
    "schema-empty-categories": Case(_bound("sex", "categories", []), ("'sex'", "non-empty 'categories'")),
    "schema-min-not-below-max": Case(_bound("age", "min", 90), ("'age'", "must be below 'max'")),
    "schema-nan-bound": Case(_bound("age", "max", float("nan")), ("'age'", "finite public 'max'")),
    "schema-inf-bound": Case(lambda ws: ws.schema(text="columns:\n  - {name: age, type: continuous, min: 0, max: .inf}\n",
                                                  name="s.yaml"), ("'age'", "finite public 'max'")),
    "schema-1e308-wide-bounds": Case(lambda ws: ws.schema(lambda raw: _column(raw, "fnlwgt").update(
        {"type": "continuous", "min": -1e308, "max": 1e308})), ("'fnlwgt'", "at most 1e+300", "narrower")),
    "schema-hierarchy-category-without-parent": Case(_hierarchy(lambda level: level["parents"].pop("Never-worked")),
                                                     ("'workclass'", "hierarchy", "Never-worked", "no parent")),
    "schema-hierarchy-parent-of-unknown-category": Case(
        _hierarchy(lambda level: level["parents"].update({"Astronaut": "government"})),
        ("'workclass'", "hierarchy", "Astronaut")),
    "schema-hierarchy-level-without-name": Case(_hierarchy(lambda level: level.pop("name")),
                                                ("'workclass'", "hierarchy level 1", "'name'")),
    # engines
    "engine-unknown": Case(_set(engine="magic"), ("'engine' must be one of", "independent")),
    "engine-option-unknown": Case(_engine_option("splice", "colours=3"), ("no splice option 'colours'", "its options are")),
    "engine-option-misspelt": Case(_engine_option("splice", "componets=3"), ("'componets' (did you mean 'components'?)",)),
    "engine-option-wrong-type": Case(_engine_option("splice", "components=many"), ("splice.components", "whole number")),
    "engine-option-not-key-value": Case(_engine_option("splice", "components"), ("--engine-option", "KEY=VALUE")),
    "engine-option-of-another-engine": Case(_engine_option("independent", "steps=3"), ("independent option", "steps", "null_floor")),
    # privacy parameters
    "epsilon-zero": Case(_set(epsilon="0"), ("'epsilon' must be a finite number > 0",)),
    "epsilon-negative": Case(_set(epsilon="-1"), ("'epsilon'",)),
    "epsilon-nan": Case(_set(epsilon="nan"), ("'epsilon'", "nan")),
    "epsilon-inf": Case(_set(epsilon="inf"), ("'epsilon'", "inf")),
    "epsilon-not-a-number": Case(_set(epsilon="lots"), ("--epsilon", "invalid float value", "--help")),
    "delta-zero": Case(_set(delta="0"), ("'delta' must be a number in the open interval (0, 1)",)),
    "delta-negative": Case(_set(delta="-0.5"), ("'delta'",)),
    "delta-one": Case(_set(delta="1"), ("'delta'",)),
    "delta-above-one": Case(_set(delta="1.5"), ("'delta'",)),
    "delta-nan": Case(_set(delta="nan"), ("'delta'", "nan")),
    # rows and seed
    "rows-zero": Case(_set(rows="0"), ("'rows' must be a whole number > 0",)),
    "rows-negative": Case(_set(rows="-5"), ("'rows'",)),
    "rows-absurd": Case(_set(rows="1000000000000000"), ("'rows'", "--rows", f"{MAX_ROWS:,}", "1000000000000000")),
    "rows-one-past-maximum": Case(_set(rows=str(MAX_ROWS + 1)), ("'rows'", "public maximum")),
    "rows-not-whole": Case(_set(rows="1.5"), ("--rows", "a whole number", "not whole")),  # 1e6 and 1_000_000 are whole
    "seed-negative": Case(_set(seed="-1"), ("'seed'", "--seed")),
    "seed-past-int64": Case(_set(seed=str(MAX_SEED + 1)), ("'seed'", str(MAX_SEED))),
    "seed-huge": Case(_set(seed=str(2**200)), ("'seed'", "2^63 - 1")),
    "required-argument-missing": Case(_set(output=None), ("required", "--output")),
    # outputs
    "output-exists": Case(_output_exists, ("already exists", "--overwrite")),
    "output-file-exists": Case(_output_file_exists, ("already exists", "--overwrite")),
    "output-parent-is-file": Case(_output_parent_is_file, ("blocker", "is a file")),
    "output-delta-over-a-file": Case(_output_file_for_delta, ("existing file", "Delta output is a folder")),
    "output-is-the-input": Case(_output_is_input, ("is the input", "choose another --output")),
    "output-inside-input-folder": Case(_output_inside_input, ("inside the input", "outside it")),
    "output-delta-over-a-foreign-folder": Case(_output_delta_over_foreign_folder,
                                               ("out/table'", "not a Delta table", "_delta_log")),
    "fit-model-inside-input-folder": Case(_fit_model_inside_input,
                                          ("--model 'csvs/model' is inside the input 'csvs'", "choose a --model outside it")),
    "sample-output-is-the-model": Case(_sample_output_is_model, ("is the model", "choose another --output")),
    "output-malformed-quoted-table": Case(_set(output="main.default.`my-table"),
                                          ("'main.default.`my-table' is not a valid table name", "in backticks")),
    "output-unwritable": Case(_output_unwritable, ("not writable",), marks=(NOT_ROOT,)),
}


def _snapshot(root: Path) -> dict:
    """Every path under ``root`` with its kind, size and mode: what a failed run must leave unchanged."""
    return {str(p.relative_to(root)): (p.is_dir(), p.stat().st_size if p.is_file() else 0, p.stat().st_mode)
            for p in sorted(root.rglob("*"))}


def run_cli(argv: list[str], capsys) -> tuple[int, str, str]:
    try:
        code = main(argv)
    except SystemExit as exc:  # argparse errors exit from inside main
        code = exc.code
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def check_failure(code, out: str, err: str, expect) -> str:
    assert code == 2, f"exit code {code}; stderr: {err!r}"
    assert out == "", f"stdout should be empty; got {out!r}"
    line = error_line(err)  # progress lines may come first; the error is one line, the last
    missing = [fragment for fragment in expect if fragment not in line]
    assert not missing, f"{missing} not in {line!r}"
    leaked = [text for text in FORBIDDEN if text in line]
    assert not leaked, f"{leaked} in {line!r}"
    return line


@pytest.mark.parametrize("case", [pytest.param(case, id=name, marks=case.marks) for name, case in CASES.items()])
def test_bad_input_fails_cleanly(case, spark, tmp_path, capsys, monkeypatch):
    ws = Workspace(tmp_path / "ws", spark)
    cwd = tmp_path / "cwd"
    cwd.mkdir()
    monkeypatch.chdir(cwd)
    try:
        case.setup(ws)
        output = Path(ws.args["--output"]) if ws.args.get("--output") else None
        output_existed = output is not None and (output.exists() or output.is_symlink())
        before = _snapshot(tmp_path)
        code, out, err = run_cli(ws.argv(), capsys)
        check_failure(code, out, err, case.expect)
        assert _snapshot(tmp_path) == before, "a failed run changed the file system"
        if output is not None and not output_existed:
            assert not output.exists()
        assert not [p for p in tmp_path.rglob("*staging*")], "a staging folder was left behind"
    finally:
        for path in tmp_path.rglob("*"):  # let pytest clean up a folder made read-only
            if path.is_dir():
                os.chmod(path, 0o755)


def test_matrix_is_large_enough():
    assert len(CASES) >= 30


# ---- through a real process ---------------------------------------------------------------------------
def _cli_command() -> list[str]:
    script = Path(sys.executable).parent / "spark-synth"
    return [str(script)] if script.is_file() else [sys.executable, "-m", "spark_synth.cli"]


def _subprocess(args: list[str], tmp_path: Path, timeout: int = 240) -> tuple[int, str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("PYSPARK_GATEWAY")}
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(REPO_ROOT), env.get("PYTHONPATH")]))  # this checkout's code
    env["SPARK_SYNTH_HOME"] = str(tmp_path / "home")
    done = subprocess.run([*_cli_command(), *args], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=timeout)
    return done.returncode, done.stdout, done.stderr


@pytest.mark.parametrize("name", ["rows-not-whole"])  # argparse's own error: formerly usage + error, two lines
def test_subprocess_fails_before_spark(name, tmp_path):
    ws = Workspace(tmp_path / "ws")
    CASES[name].setup(ws)
    code, out, err = _subprocess(ws.argv(), tmp_path)
    check_failure(code, out, err, CASES[name].expect)
    assert not (tmp_path / "ws" / "out" / "synthetic.parquet").exists()


def test_subprocess_spark_failure_is_one_line(tmp_path):
    """A case Spark is started for: the JVM's console output (Ivy, log4j) goes to a log file, not stderr."""
    ws = Workspace(tmp_path / "ws")
    _mixed_folder(ws)
    before = _snapshot(ws.root)
    code, out, err = _subprocess(ws.argv(), tmp_path)
    check_failure(code, out, err, CASES["input-mixed-folder"].expect)
    assert _snapshot(ws.root) == before
    log = tmp_path / "home" / "logs" / "spark-driver.log"
    assert log.is_file() and log.stat().st_size > 0  # where Spark's own console output went


def test_bom_and_crlf_header_are_accepted(spark, tmp_path):
    """The header checks refuse nothing Spark reads correctly: a UTF-8 BOM and CRLF line ends."""
    from spark_synth.io import read_input

    path = tmp_path / "bom.csv"
    path.write_bytes(codecs.BOM_UTF8 + b"age,colour\r\n31,red\r\n")
    df = read_input(spark, str(path))
    assert df.columns == ["age", "colour"] and df.count() == 1


def test_good_folders_are_still_read(spark, tmp_path):
    """The folder checks accept what Spark writes (CSV and Parquet folders; Delta is read in test_sample_and_io)
    and a plain folder of CSV or Parquet files."""
    from spark_synth.io import read_input

    df = spark.createDataFrame([(31, "red"), (45, "blue")], "age long, colour string").coalesce(1)
    df.write.option("header", True).csv(str(tmp_path / "out.csv"))
    df.write.parquet(str(tmp_path / "out.parquet"))
    shutil.copytree(tmp_path / "out.parquet", tmp_path / "plain_parquet")
    (tmp_path / "plain_csv").mkdir()
    (tmp_path / "plain_csv" / "a.csv").write_text(TINY_ROWS)
    for name, rows in (("out.csv", 2), ("out.parquet", 2), ("plain_parquet", 2), ("plain_csv", 3)):
        frame = read_input(spark, str(tmp_path / name))
        assert sorted(frame.columns) == ["age", "colour"] and frame.count() == rows, name
