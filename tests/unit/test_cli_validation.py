"""Parameter errors fail fast (before Spark starts) with one line and exit code 2."""

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import error_line

from spark_synth.cli import main

BASE = ["run", "--input", "x.csv", "--schema", "s.json", "--rows", "10", "--output", "out.parquet"]


@pytest.mark.parametrize(
    "extra, fragment",
    [
        (["--epsilon", "0", "--delta", "1e-9"], "'epsilon' must be a finite number > 0"),
        (["--epsilon", "-1", "--delta", "1e-9"], "'epsilon'"),
        (["--epsilon", "1", "--delta", "0"], "'delta' must be a number in the open interval (0, 1)"),
        (["--epsilon", "1", "--delta", "1"], "'delta'"),
        (["--epsilon", "1", "--delta", "1e-9", "--engine", "magic"], "'engine' must be one of ['auto', 'dgm', 'fpt', 'independent', 'splice']"),
    ],
)
def test_bad_parameters(extra, fragment, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(BASE + extra) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in error_line(err)
    assert not (tmp_path / "out.parquet").exists()


def test_rows_must_be_positive(capsys):
    args = ["run", "--input", "x.csv", "--schema", "s.json", "--epsilon", "1", "--delta", "1e-9", "--rows", "0", "--output", "o"]
    assert main(args) == 2
    assert "'rows' must be a whole number > 0" in capsys.readouterr().err


def test_help_reads_well():
    out = subprocess.run([sys.executable, "-m", "spark_synth.cli", "run", "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    for flag in ("--input", "--schema", "--engine", "--epsilon", "--delta", "--rows", "--output", "--seed", "--no-mlflow"):
        assert flag in out.stdout


def test_engine_options_are_parsed_and_checked(capsys):
    from spark_synth.cli import engine_options
    from spark_synth.engines.splice import SpliceConfig

    assert engine_options("splice", ["components=8", "device=cpu", "marginal_share=0.4"]) == SpliceConfig(
        components=8, device="cpu", marginal_share=0.4)  # the engine's typed config, made once here
    assert engine_options("splice", []) is None  # none given: the engine's defaults
    args = BASE + ["--epsilon", "1", "--delta", "1e-9", "--engine", "splice", "--engine-option", "colours=3"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "--engine-option: no splice option 'colours'; its options are anchor_weight, components," in err
    args = BASE + ["--epsilon", "1", "--delta", "1e-9", "--engine", "splice", "--engine-option", "components=0"]
    assert main(args) == 2
    assert "'splice.components (--engine-option)' must be a whole number >= 1" in capsys.readouterr().err
    args = BASE + ["--epsilon", "1", "--delta", "1e-9", "--engine", "splice", "--engine-option", "components=many"]
    assert main(args) == 2
    assert "'splice.components (--engine-option)' must be a whole number; got 'many'" in capsys.readouterr().err


# ---- issue 46: the first hour of a new user -------------------------------------------------------
BUNDLED = Path(__file__).resolve().parents[2] / "spark_synth" / "data"
SCHEMA = str(BUNDLED / "adult_sample.schema.json")
DATA = str(BUNDLED / "adult_sample.csv")


@pytest.fixture
def no_spark(monkeypatch):
    """Fail the test if Spark is started: these checks must come before the JVM (16-18 s)."""
    import spark_synth.session

    def refuse(*args, **kwargs):
        raise AssertionError("Spark was started")

    monkeypatch.setattr(spark_synth.session, "get_spark", refuse)
    for name in ("HADOOP_CONF_DIR", "YARN_CONF_DIR", "SPARK_REMOTE", "PYSPARK_GATEWAY_PORT"):
        monkeypatch.delenv(name, raising=False)
    if "pyspark.sql" in sys.modules:  # as a fresh CLI process: no session of an earlier test is active
        from pyspark import SparkContext
        from pyspark.sql import SparkSession

        monkeypatch.setattr(SparkContext, "_active_spark_context", None)
        monkeypatch.setattr(SparkSession, "getActiveSession", classmethod(lambda cls: None))


def _cli(capsys, *args):
    code = main([str(a) for a in args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_a_missing_input_or_an_existing_output_is_refused_before_spark_starts(no_spark, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    run = ["run", "--schema", SCHEMA, "--epsilon", "1", "--delta", "1e-9", "--rows", "10", "--no-mlflow"]
    code, out, err = _cli(capsys, *run, "--input", tmp_path / "nope.csv", "--output", tmp_path / "o.parquet")
    assert code == 2 and out == "" and "input '" in error_line(err) and "nope.csv' does not exist" in error_line(err)
    (tmp_path / "taken").mkdir()
    code, _, err = _cli(capsys, *run, "--input", DATA, "--output", tmp_path / "taken")
    assert code == 2 and "output '" in error_line(err) and "taken' already exists" in error_line(err)
    (tmp_path / "foreign").mkdir()
    (tmp_path / "foreign" / "notes.txt").write_text("x")
    code, _, err = _cli(capsys, *run, "--input", DATA, "--output", tmp_path / "foreign", "--overwrite")
    assert code == 2 and "not a Delta table" in error_line(err)
    code, _, err = _cli(capsys, *run, "--input", f"file://{tmp_path}/nope.csv", "--output", tmp_path / "o.parquet")
    assert code == 2 and "does not exist" in error_line(err)
    code, _, err = _cli(capsys, "fit", "--input", "missing/data.parquet", "--schema", SCHEMA, "--epsilon", "1",
                        "--delta", "1e-9", "--model", tmp_path / "m", "--no-mlflow")
    assert code == 2 and "input 'missing/data.parquet' does not exist" in error_line(err)
    code, _, err = _cli(capsys, "sample", "--model", tmp_path / "m", "--rows", "5", "--output", tmp_path / "taken")
    assert code == 2 and "already exists" in error_line(err)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["foreign", "taken"]


def test_uris_and_table_names_are_left_to_spark(no_spark, tmp_path, capsys, monkeypatch):
    """Only local paths are checked early: an s3:// input or a catalog table goes on to Spark (here refused)."""
    monkeypatch.chdir(tmp_path)
    for source in ("s3://bucket/table", "dbfs:/data/t", "sales.customers"):
        code, _, err = _cli(capsys, "run", "--input", source, "--schema", SCHEMA, "--epsilon", "1", "--delta", "1e-9",
                            "--rows", "10", "--output", tmp_path / "o.parquet", "--no-mlflow")
        assert code == 1 and "Spark was started" in err, (source, err)
    monkeypatch.setenv("HADOOP_CONF_DIR", str(tmp_path))  # a plain path may then mean HDFS: Spark decides
    code, _, err = _cli(capsys, "run", "--input", "/data/x.csv", "--schema", SCHEMA, "--epsilon", "1", "--delta", "1e-9",
                        "--rows", "10", "--output", tmp_path / "o.parquet", "--no-mlflow")
    assert code == 1 and "Spark was started" in err


def test_a_bare_output_name_is_said_to_be_a_table(no_spark, tmp_path, capsys, monkeypatch):
    from spark_synth.commands import output_kind

    assert [output_kind(t) for t in ("out1", "db.out1", "main.db.`my-t`", "./out1", "out1.parquet", "s3://b/o")] == \
        ["table", "table", "table", "path", "path", "path"]
    monkeypatch.chdir(tmp_path)
    args = ["run", "--input", DATA, "--schema", SCHEMA, "--epsilon", "1", "--delta", "1e-9", "--rows", "10", "--no-mlflow"]
    code, _, err = _cli(capsys, *args, "--output", "out1")
    assert code == 1 and "Spark was started" in err  # then Spark writes the table
    assert "spark-synth: output: catalog table out1 (Delta; a name without '/' is a table" in err
    assert "write ./out1 for a folder" in err
    (tmp_path / "out1").mkdir()  # a folder of that name here: the user most likely meant it
    code, _, err = _cli(capsys, *args, "--output", "out1")
    assert code == 2 and "names a catalog table, and there is also a folder 'out1' here" in error_line(err)
    assert "./out1" in error_line(err)


@pytest.mark.parametrize("text, rows", [("1e6", 10**6), ("1E6", 10**6), ("1_000_000", 10**6), ("1,000,000", 10**6),
                                        ("2.5e3", 2500), ("10000", 10000)])
def test_rows_take_the_usual_ways_of_writing_a_whole_number(text, rows):
    from spark_synth.cli import build_parser

    args = build_parser().parse_args(["run", "--input", "x.csv", "--schema", "s.json", "--epsilon", "1", "--delta",
                                      "1e-9", "--rows", text, "--output", "o"])
    assert args.rows == rows


@pytest.mark.parametrize("text, fragment", [("1.5", "not whole"), ("1e-3", "not whole"), ("ten", "got 'ten'"),
                                            ("1,00,000", "got '1,00,000'")])
def test_rows_that_are_not_whole_are_refused_clearly(text, fragment, capsys):
    code = None
    try:
        main(["run", "--input", "x.csv", "--schema", "s.json", "--epsilon", "1", "--delta", "1e-9", "--rows", text,
              "--output", "o"])
    except SystemExit as exc:
        code = exc.code
    line = error_line(capsys.readouterr().err)
    assert code == 2 and "argument --rows: must be a whole number (e.g. 1000000, 1e6" in line and fragment in line


def test_job_configs_take_the_same_whole_numbers(tmp_path):
    from spark_synth.cli import job_parser
    from spark_synth.config import load_job_config

    cfg = tmp_path / "c.yaml"
    cfg.write_text("input: a.csv\nschema: s.json\nepsilon: 1\ndelta: 1.0e-9\noutput: o\nrows: '1,000,000'\n")
    assert load_job_config("run", cfg)["rows"] == 10**6
    cfg.write_text("input: a.csv\nschema: s.json\nepsilon: 1\ndelta: 1.0e-9\noutput: o\nrows: 1e6\n")
    assert load_job_config("run", cfg)["rows"] == 10**6
    assert job_parser("run", "x").parse_args(["--rows", "1_000"]).rows == 1000


def test_sample_accepts_no_mlflow(no_spark, tmp_path, capsys):
    from spark_synth.cli import build_parser, job_parser

    args = ["sample", "--model", "m", "--rows", "5", "--output", "o.csv"]
    assert build_parser().parse_args(args + ["--no-mlflow"]).mlflow is False
    assert build_parser().parse_args(args).mlflow is True
    assert job_parser("sample", "x").parse_args(["--no-mlflow"]).mlflow is False
    # sampling logs nothing, so --no-mlflow changes nothing for a directory; an MLflow URI needs MLflow
    code, _, err = _cli(capsys, "sample", "--model", "models:/adult@champion", "--rows", "5", "--output",
                        tmp_path / "o.csv", "--no-mlflow")
    assert code == 2 and "models:/adult@champion" in error_line(err) and "--no-mlflow" in error_line(err)
    code, _, err = _cli(capsys, "sample", "--model", tmp_path / "none", "--rows", "5", "--output", tmp_path / "o.csv",
                        "--no-mlflow")
    assert code == 2 and "no saved synthesizer" in error_line(err)


@pytest.mark.parametrize("command", ["run", "fit"])
def test_help_lists_the_engines_and_what_each_is_for(command):
    from spark_synth.cli import ENGINE_PURPOSES
    from spark_synth.engines import ENGINES

    out = subprocess.run([sys.executable, "-m", "spark_synth.cli", command, "--help"], capture_output=True, text=True)
    assert out.returncode == 0
    lines = out.stdout.splitlines()
    for name in ENGINES:
        line = next((l for l in lines if l.split()[:1] == [name]), None)
        assert line is not None, f"engine {name} is not listed in `{command} --help`"
        assert ENGINE_PURPOSES[name][:30] in line


def test_an_unknown_engine_option_suggests_the_closest(capsys):
    args = BASE + ["--epsilon", "1", "--delta", "1e-9", "--engine", "splice", "--engine-option", "componets=3"]
    assert main(args) == 2
    line = error_line(capsys.readouterr().err)
    assert line == "spark-synth: error: --engine-option: no splice option 'componets' (did you mean 'components'?)"
    from spark_synth.engines import get_engine

    with pytest.raises(Exception, match=r"^engine_options: no fpt option 'iteration' \(did you mean 'iterations'\?\)$"):
        get_engine("fpt", iteration=3)  # the Python API says the same


def test_job_config_errors_name_the_key_and_the_file(tmp_path):
    from spark_synth.config import load_job_config
    from spark_synth.errors import ParameterError

    cfg = tmp_path / "my_job.yaml"
    base = "input: a.csv\nschema: s.json\nrows: 5\noutput: o\nengine: splice\n"
    cases = {"engine_options: {componets: 3}\n":
             f"engine_options.componets in {cfg}: no splice option 'componets' (did you mean 'components'?)",
             "engine_options: {components: 0}\n": f"engine_options.components in {cfg}: must be a whole number >= 1; got 0",
             "engine_options: {steps: x}\n": f"engine_options.steps in {cfg}: must be a whole number; got 'x'",
             "engine_options: 3\n": f"engine_options in {cfg}: must be a mapping of option name -> value; got 3"}
    for body, message in cases.items():
        cfg.write_text(base + body)
        with pytest.raises(ParameterError) as info:
            load_job_config("run", cfg)
        assert str(info.value) == message
    cfg.write_text(base + "engine_options: {components: 4}\n")  # the flag's value is the one named
    with pytest.raises(ParameterError, match=r"'splice.components \(--engine-option\)' must be a whole number >= 1"):
        load_job_config("run", cfg, engine_options={"components": 0})
