"""Parameter errors fail fast (before Spark starts) with one line and exit code 2."""

import subprocess
import sys

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
        (["--epsilon", "1", "--delta", "1e-9", "--engine", "magic"], "'engine' must be one of ['dgm', 'fpt', 'independent', 'splice']"),
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

    assert engine_options("splice", ["components=8", "device=cpu", "marginal_share=0.4"]) == {
        "components": 8, "device": "cpu", "marginal_share": 0.4}
    args = BASE + ["--epsilon", "1", "--delta", "1e-9", "--engine", "splice", "--engine-option", "colours=3"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert "'splice option (--engine-option)' must be one of ['anchor_weight'," in err and "got 'colours'" in err
    args = BASE + ["--epsilon", "1", "--delta", "1e-9", "--engine", "splice", "--engine-option", "components=0"]
    assert main(args) == 2
    assert "'splice.components (--engine-option)' must be a whole number >= 1" in capsys.readouterr().err
    args = BASE + ["--epsilon", "1", "--delta", "1e-9", "--engine", "splice", "--engine-option", "components=many"]
    assert main(args) == 2
    assert "'splice.components (--engine-option)' must be a whole number; got 'many'" in capsys.readouterr().err
