"""Run configs (conf/runs), engine defaults (spark_synth/conf/engines), Spark profiles, and the job entry points'
argument handling — all without Spark."""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path

import pytest

from tests.helpers import error_line

from spark_synth.config import JOB_KEYS, RunConfig, load_job_config, read_yaml_config
from spark_synth.engines import ENGINES
from spark_synth.errors import ParameterError
from spark_synth.session import load_profile

REPO = Path(__file__).resolve().parents[2]
RUN_CONFIGS = sorted((REPO / "conf" / "runs").glob("*.yaml"))
SHARED = ["adult", "bank_marketing", "california_housing", "credit_default", "diabetes_readmission",
          "german_credit", "mushroom"]


def load_job(name: str):
    spec = importlib.util.spec_from_file_location(f"job_{name}", REPO / "jobs" / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_one_run_config_per_shared_dataset_plus_the_bundled_sample():
    assert sorted(p.stem for p in RUN_CONFIGS) == sorted(SHARED + ["adult_sample"])


@pytest.mark.parametrize("path", RUN_CONFIGS, ids=lambda p: p.stem)
def test_run_configs_load_for_every_job(path, monkeypatch):
    monkeypatch.setenv("SPARK_SYNTH_SHARED_DATA", "/data/shared")
    monkeypatch.setenv("SPARK_SYNTH_HOME", "/tmp/home")
    run = load_job_config("run", path)
    RunConfig(**run)  # the run job builds exactly this
    assert run["engine"] in ENGINES and run["rows"] > 0 and 0 < run["delta"] < 1
    fit = load_job_config("fit", path)
    sample = load_job_config("sample", path)
    assert fit["model"] == sample["model"] == f"/tmp/home/models/{path.stem}"
    assert run["output"] == f"/tmp/home/synthetic/{path.stem}"
    if path.stem in SHARED:
        assert run["input"] == f"/data/shared/{path.stem}.csv"
        assert run["schema"] == f"/data/shared/{path.stem}.schema.json"


@pytest.mark.parametrize("name", SHARED)
def test_shared_dataset_configs_match_their_schema_files(name, shared_data, monkeypatch):
    monkeypatch.setenv("SPARK_SYNTH_SHARED_DATA", str(shared_data))
    run = load_job_config("run", REPO / "conf" / "runs" / f"{name}.yaml")
    schema = json.loads(Path(run["schema"]).read_text())
    assert Path(run["input"]).is_file() and run["rows"] == schema["rows"]


def test_bundled_sample_config_works_from_the_repository_root(monkeypatch):
    monkeypatch.chdir(REPO)
    run = load_job_config("run", "conf/runs/adult_sample.yaml")
    assert Path(run["input"]).is_file() and Path(run["schema"]).is_file()
    assert (run["epsilon"], run["delta"]) == (1.0, 1e-9)  # from spark_synth/conf/engines/independent.yaml


@pytest.mark.parametrize("path", sorted((REPO / "spark_synth" / "conf" / "engines").glob("*.yaml")), ids=lambda p: p.stem)
def test_engine_defaults_name_registered_engines_and_valid_options(path, tmp_path):
    assert path.stem in ENGINES
    cfg = tmp_path / "c.yaml"
    cfg.write_text(f"input: a.csv\nschema: s.json\nengine: {path.stem}\nrows: 5\noutput: out\n")
    run = load_job_config("run", cfg)
    defaults = read_yaml_config(path, ("epsilon", "delta", "out_of_domain", "engine_options", "description"))
    assert run["epsilon"] == defaults["epsilon"]
    assert run["engine_options"] == ENGINES[path.stem].config_class(**defaults["engine_options"])  # the typed config


@pytest.mark.parametrize("path", sorted((REPO / "spark_synth" / "conf" / "engines").glob("*.yaml")), ids=lambda p: p.stem)
def test_shipped_engine_defaults_repeat_the_engines_own_defaults(path):
    """The jobs read these files, the CLI and the API do not: an option here that differs from the
    engine's config dataclass would make `jobs/run.py` fit a different model than `spark-synth run`."""
    from spark_synth.engines import get_engine

    options = read_yaml_config(path, ("epsilon", "delta", "out_of_domain", "engine_options", "description")).get("engine_options") or {}
    own = get_engine(path.stem).config()
    assert {k: v for k, v in options.items() if own.get(k) != v} == {}


def test_engine_options_merge_key_by_key_over_the_engine_defaults(tmp_path):
    """A run config that sets one option keeps every other default; the command line wins last."""
    defaults = read_yaml_config(REPO / "spark_synth" / "conf" / "engines" / "splice.yaml", ("epsilon", "delta", "out_of_domain", "engine_options",
                                                                            "description"))["engine_options"]
    cfg = tmp_path / "c.yaml"
    cfg.write_text("input: a.csv\nschema: s.json\nengine: splice\nrows: 5\noutput: out\nengine_options: {components: 8, steps: 50}\n")
    from spark_synth.engines.splice import SpliceConfig

    run = load_job_config("run", cfg)
    assert run["engine_options"] == SpliceConfig(**{**defaults, "components": 8, "steps": 50})
    run = load_job_config("run", cfg, engine_options={"steps": 7, "rank": 2})
    assert run["engine_options"] == SpliceConfig(**{**defaults, "components": 8, "steps": 7, "rank": 2})
    assert RunConfig(**run).engine_options is run["engine_options"]  # passed along as it is, not checked again
    with pytest.raises(ParameterError, match=r"'splice.steps \(--engine-option\)' must be a whole number; got 'x'"):
        load_job_config("run", cfg, engine_options={"steps": "x"})


def test_job_engine_option_flags_use_the_cli_syntax(monkeypatch, tmp_path):
    """Jobs take ``--engine-option KEY=VALUE`` exactly like the CLI (one parser)."""
    from spark_synth.cli import job_parser
    from spark_synth.config import parse_option_pairs

    args = job_parser("run", "x").parse_args(["--engine-option", "components=8", "--engine-option", "device=cpu"])
    assert parse_option_pairs(args.engine_options) == {"components": 8, "device": "cpu"}
    with pytest.raises(ParameterError, match="KEY=VALUE"):
        parse_option_pairs(["components"])


def test_dataset_id_names_the_ledger_of_run_and_fit_jobs(tmp_path):
    """``dataset_id`` (``--dataset-id``): the budget ledger run/fit charge; sample spends nothing and takes none."""
    from spark_synth.cli import job_parser

    cfg = tmp_path / "c.yaml"
    cfg.write_text("input: a.csv\nschema: s.json\nepsilon: 1\ndelta: 1.0e-9\nrows: 5\noutput: o\nmodel: m\n"
                   "dataset_id: main.hr.employees\n")
    run = load_job_config("run", cfg)
    assert RunConfig(**run).dataset_id == "main.hr.employees"
    assert load_job_config("fit", cfg, dataset_id="other")["dataset_id"] == "other"
    assert "dataset_id" not in load_job_config("sample", cfg)
    with pytest.raises(ParameterError, match=r"'--dataset-id' must be a non-empty dataset id"):
        load_job_config("run", cfg, dataset_id=" ")
    with pytest.raises(ParameterError, match=r"'dataset_id' must be a non-empty dataset id"):
        RunConfig(**{**run, "dataset_id": ""})
    assert job_parser("fit", "x").parse_args(["--dataset-id", "d"]).dataset_id == "d"
    assert "--dataset-id" not in job_parser("sample", "x").format_help()


def test_spark_profiles_load():
    assert load_profile("local")["master"].startswith("local")
    assert load_profile("cluster")["master"] is None  # on a cluster the platform sets the master


def test_spark_conf_overrides_packaged_profiles_file_by_file(tmp_path, monkeypatch):
    """$SPARK_SYNTH_CONF replaces only the files it holds; the packaged ones stay reachable."""
    (tmp_path / "spark").mkdir()
    (tmp_path / "spark" / "local.yaml").write_text("master: local[1]\nspark: {spark.ui.enabled: 'false'}\n")
    (tmp_path / "spark" / "tiny.yaml").write_text("master: local[1]\n")
    monkeypatch.setenv("SPARK_SYNTH_CONF", str(tmp_path))
    assert load_profile("local") == {"master": "local[1]", "spark": {"spark.ui.enabled": "false"}}
    assert load_profile("tiny")["master"] == "local[1]"
    assert load_profile("cluster")["master"] is None  # not overridden: the packaged file
    with pytest.raises(ParameterError, match=r"must be one of \['cluster', 'local', 'tiny'\]"):
        load_profile("nope")


def test_precedence_overrides_then_file_then_engine_defaults(tmp_path, monkeypatch):
    conf = tmp_path / "conf"
    (conf / "engines").mkdir(parents=True)
    (conf / "engines" / "independent.yaml").write_text("epsilon: 3.0\ndelta: 1.0e-6\nout_of_domain: error\n")
    monkeypatch.setenv("SPARK_SYNTH_CONF", str(conf))
    cfg = tmp_path / "run.yaml"
    cfg.write_text("input: a.csv\nschema: s.json\nengine: independent\nepsilon: 2.0\nrows: 10\noutput: o\n")
    run = load_job_config("run", cfg, epsilon=0.5)
    assert run["epsilon"] == 0.5                # command line beats the file
    assert run["delta"] == 1e-6                 # engine default fills what the file lacks
    assert run["out_of_domain"] == "error"
    assert load_job_config("run", cfg)["epsilon"] == 2.0  # file beats the engine default


def test_env_expansion_and_yaml_exponent_text(tmp_path, monkeypatch):
    cfg = tmp_path / "run.yaml"
    cfg.write_text("input: ${DATA_DIR}/a.csv\nschema: ${NOPE:-fallback}/s.json\nepsilon: 1\ndelta: 1e-9\nrows: 10\noutput: o\n")
    monkeypatch.setenv("DATA_DIR", "/x")
    run = load_job_config("run", cfg)
    assert (run["input"], run["schema"], run["delta"]) == ("/x/a.csv", "fallback/s.json", 1e-9)
    monkeypatch.delenv("DATA_DIR")
    with pytest.raises(ParameterError, match=r"'input \(in .*run.yaml\)'.*\$\{DATA_DIR\} is set"):
        load_job_config("run", cfg)


@pytest.mark.parametrize(
    "body, fragment",
    [
        ("epsilon: 1\ndelta: 1.0e-9\nrows: 10\noutput: o\nspeed: 3\n", "keys of"),
        ("epsilon: 1\ndelta: 1.0e-9\nrows: 10\noutput: o\nengine: magic\n", "must be one of ["),
        ("epsilon: -1\ndelta: 1.0e-9\nrows: 10\noutput: o\n", "'epsilon (in "),
        ("epsilon: 1\ndelta: 2\nrows: 10\noutput: o\n", "'delta (in "),
        ("epsilon: 1\ndelta: 1.0e-9\nrows: 1.5\noutput: o\n", "'rows (in "),
        ("epsilon: 1\ndelta: 1.0e-9\nrows: 10\noutput: o\nout_of_domain: drop\n", "one of ['clip', 'error']"),
        ("epsilon: 1\ndelta: 1.0e-9\nrows: 10\noutput: o\noverwrite: maybe\n", "true or false"),
        ("epsilon: 1\ndelta: 1.0e-9\nrows: 10\noutput: o\nengine_options: {depth: 3}\n", "no engine options with engine auto"),
        ("engine: independent\nepsilon: 1\ndelta: 1.0e-9\nrows: 10\noutput: o\nengine_options: {depth: 3}\n", "independent option"),
        ("epsilon: 1\ndelta: 1.0e-9\nrows: 10\n", "'output' must be set in the config file or given as --output"),
        ("- just\n- a list\n", "a YAML mapping"),
        ("epsilon: [1\n", "valid YAML"),
    ],
)
def test_bad_configs_name_the_key_and_the_allowed_values(tmp_path, body, fragment):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("input: a.csv\nschema: s.json\n" + body if not body.startswith(("-", "epsilon: [")) else body)
    with pytest.raises(ParameterError) as info:
        load_job_config("run", cfg)
    assert fragment in str(info.value) and "\n" not in str(info.value)


def test_unknown_key_message_lists_allowed_keys(tmp_path):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text("input: a.csv\nspeed: 3\n")
    with pytest.raises(ParameterError) as info:
        load_job_config("fit", cfg)
    message = str(info.value)
    assert "['speed']" in message and all(k in message for k in JOB_KEYS["run"])


def test_engine_options_are_checked_against_the_engine(tmp_path):
    cfg = tmp_path / "c.yaml"
    cfg.write_text("input: a.csv\nschema: s.json\nepsilon: 1\ndelta: 1.0e-9\nrows: 5\noutput: o\n")
    options = {name: {"no_such_option": 1} for name in ENGINES}
    for engine, opts in options.items():
        with pytest.raises(ParameterError, match="no_such_option"):
            load_job_config("run", cfg, engine=engine, engine_options=opts)


# ---- the jobs themselves --------------------------------------------------------------------------
@pytest.mark.parametrize("name", ["run", "fit", "sample"])
def test_jobs_are_thin_and_set_no_master(name):
    source = (REPO / "jobs" / f"{name}.py").read_text()
    tree = ast.parse(source)
    code_strings = [n.value for n in ast.walk(tree) if isinstance(n, ast.Constant) and isinstance(n.value, str)]
    docstring = tree.body[0].value.value  # the module docstring, as written
    assert "spark-submit" in docstring and "--config" in docstring
    assert not any("local[" in s or "spark.master" in s for s in code_strings if s != docstring)
    calls = {n.func.attr for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)}
    assert not calls & {"master", "config", "getOrCreate", "read", "write"}
    imports = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert imports <= {"spark_synth", "spark_synth.cli", "spark_synth.config", "spark_synth.commands"}
    assert callable(load_job(name).main)


@pytest.mark.parametrize(
    "name, argv, fragment",
    [
        ("run", ["--config", "conf/runs/adult_sample.yaml", "--epsilon", "0"], "'--epsilon' must be a finite number > 0"),
        ("run", ["--config", "conf/runs/nope.yaml"], "'config' must be an existing YAML file"),
        ("run", ["--input", "a.csv", "--schema", "s.json", "--rows", "5", "--epsilon", "1", "--delta", "1e-9"], "'output' must be set"),
        ("fit", ["--config", "conf/runs/adult_sample.yaml", "--engine", "magic"], "'--engine' must be one of"),
        ("sample", ["--model", "m", "--output", "o.parquet"], "'rows' must be set"),
    ],
)
def test_jobs_bad_input_one_line_exit_2_nothing_written(name, argv, fragment, capsys, monkeypatch, tmp_path):
    monkeypatch.chdir(REPO)
    monkeypatch.setenv("SPARK_SYNTH_HOME", str(tmp_path))
    assert load_job(name).main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert fragment in error_line(err)
    assert list(tmp_path.iterdir()) == []


def test_job_help_lists_config_and_overrides(capsys):
    with pytest.raises(SystemExit) as info:
        load_job("run").main(["--help"])
    assert info.value.code == 0
    out = capsys.readouterr().out
    for flag in ("--config", "--input", "--epsilon", "--delta", "--rows", "--output", "--engine", "--no-mlflow"):
        assert flag in out
