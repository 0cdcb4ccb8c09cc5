"""``--engine auto``: the engine from public facts only (the schema's width, whether torch is installed)."""

import pytest

from spark_synth.config import RunConfig, load_job_config
from spark_synth.engines import get_engine
from spark_synth.engines.choice import (ALL_TARGET_TRIPLES_BELOW_EPSILON, MAX_FPT_COLUMNS, STRONGEST_TARGET_COLUMNS,
                                        TARGET_TRIPLE_COLUMNS, TARGET_TRIPLES_BELOW_EPSILON, THREE_WAY_EPSILON, choose_engine,
                                        resolve_engine)
from spark_synth.schema import Column, ColumnType, Schema
from spark_synth.errors import ParameterError


def test_fpt_up_to_the_measured_width_then_dgm_on_partitions_and_independent_without_torch():
    assert choose_engine(15, torch_installed=True).engine == "fpt"
    assert choose_engine(MAX_FPT_COLUMNS, torch_installed=True).engine == "fpt"
    wide = choose_engine(MAX_FPT_COLUMNS + 1, torch_installed=True)
    assert (wide.engine, wide.options) == ("dgm", {"n_partitions": 2})
    assert choose_engine(3 * MAX_FPT_COLUMNS + 1, torch_installed=True).options == {"n_partitions": 4}
    assert "not measured" in wide.reason
    plain = choose_engine(15, torch_installed=False)
    assert plain.engine == "independent" and "spark-synth[torch]" in plain.reason
    assert choose_engine(15).engine == "fpt"  # this test environment has torch


def _schema(*numeric: bool, target: str | None = None) -> Schema:
    return Schema([Column(f"n{i}", ColumnType.INTEGER, min=0, max=9) if is_numeric else
                   Column(f"c{i}", ColumnType.CATEGORICAL, categories=("a", "b")) for i, is_numeric in enumerate(numeric)],
                  target=target)


def test_fpt_gets_the_target_triples_on_wide_tables_with_a_categorical_target_below_epsilon_3():
    wide = [True] + [False] * (TARGET_TRIPLE_COLUMNS - 1)  # one numeric column: not categorical-only
    below = ALL_TARGET_TRIPLES_BELOW_EPSILON / 2
    assert (ALL_TARGET_TRIPLES_BELOW_EPSILON, TARGET_TRIPLES_BELOW_EPSILON, STRONGEST_TARGET_COLUMNS) == (1.0, 3.0, 4)
    chosen = resolve_engine("auto", _schema(*wide, target="c1"), None, below)
    assert chosen[:2] == ("fpt", {"target_triples": True}) and "target_triples" in chosen[2].reason
    strongest = resolve_engine("auto", _schema(*wide, target="c1"), None, ALL_TARGET_TRIPLES_BELOW_EPSILON)
    assert strongest[:2] == ("fpt", {"target_triples": True, "target_triple_columns": 4, "every_triple_at_noise_share": 0.4})
    assert "target_triple_columns=4" in strongest[2].reason and "every_triple_at_noise_share=0.4" in strongest[2].reason
    accepted = get_engine("fpt", **strongest[1]).options  # options the engine accepts
    assert (accepted.target_triple_columns, accepted.every_triple_at_noise_share) == (4, 0.4)
    assert resolve_engine("auto", _schema(*wide, target="c1"), None, TARGET_TRIPLES_BELOW_EPSILON)[1] is None
    assert resolve_engine("auto", _schema(*wide[:-1], target="c1"), None, below)[1] is None  # too few columns
    assert resolve_engine("auto", _schema(*wide, target="n0"), None, below)[1] is None  # a regression target
    assert resolve_engine("auto", _schema(*wide), None, below)[1] is None  # no target
    categorical = _schema(*[False] * TARGET_TRIPLE_COLUMNS, target="c0")
    assert resolve_engine("auto", categorical, None, below)[1] == {"target_triples": True}
    assert resolve_engine("auto", categorical, None, THREE_WAY_EPSILON)[1] == {"max_way": 3}


def test_fpt_gets_the_3_way_workload_on_categorical_tables_from_epsilon_1():
    categorical, mixed = _schema(False, False, False), _schema(False, True, False)
    assert resolve_engine("auto", categorical, None, THREE_WAY_EPSILON)[:2] == ("fpt", {"max_way": 3})
    assert resolve_engine("auto", categorical, None, 3.0)[2].options == {"max_way": 3}
    assert "max_way=3" in resolve_engine("auto", categorical, None, 3.0)[2].reason
    assert resolve_engine("auto", categorical, None, 0.3)[:2] == ("fpt", None)  # too little budget for 3-way tables
    assert resolve_engine("auto", mixed, None, 3.0)[:2] == ("fpt", None)  # a numeric column: 2-way
    assert resolve_engine("auto", categorical, None)[:2] == ("fpt", None)  # no epsilon given: the engine's default
    assert choose_engine(3, torch_installed=False, epsilon=3.0, categorical_only=True).engine == "independent"


def test_auto_resolves_only_itself_and_refuses_engine_options():
    schema = _schema(*[False] * 15)
    assert resolve_engine("splice", schema, {"components": 4}) == ("splice", {"components": 4}, None)
    engine, options, choice = resolve_engine("auto", schema, None)
    assert (engine, options, choice.engine) == ("fpt", None, "fpt")
    assert choice.as_dict() == {"engine": "fpt", "reason": choice.reason}
    with pytest.raises(ParameterError, match="engine_options.*name the engine"):
        resolve_engine("auto", schema, {"iterations": 5})
    with pytest.raises(ParameterError, match="auto.*choose_engine"):
        get_engine("auto")


def test_auto_is_the_default_of_run_configs_and_jobs(tmp_path):
    config = RunConfig(input="in.csv", schema="s.json", epsilon=1, delta=1e-9, rows=10, output="out.parquet")
    assert config.engine == "auto"
    job = tmp_path / "job.yaml"
    job.write_text("input: in.csv\nschema: s.json\nepsilon: 1\ndelta: 1.0e-9\nrows: 10\noutput: out.parquet\n")
    assert load_job_config("run", job).get("engine", "auto") == "auto"
    job.write_text(job.read_text() + "engine_options: {iterations: 5}\n")
    with pytest.raises(ParameterError, match="name the engine"):
        load_job_config("run", job)
    with pytest.raises(ParameterError, match="one of \\['auto'"):
        RunConfig(input="in.csv", schema="s.json", engine="best", epsilon=1, delta=1e-9, rows=10, output="o.parquet")


def test_a_job_with_engine_auto_takes_the_chosen_engines_run_choices_but_not_its_options(tmp_path):
    from tests.conftest import REPO_ROOT

    schema = REPO_ROOT / "spark_synth" / "data" / "adult_sample.schema.json"
    job = tmp_path / "job.yaml"
    job.write_text(f"input: in.csv\nschema: {schema}\nrows: 10\noutput: out.parquet\n")
    settings = load_job_config("run", job)
    assert (settings["epsilon"], settings["delta"]) == (1.0, 1e-9)  # from conf/engines/fpt.yaml, auto's choice here
    assert not settings.get("engine_options")  # the dataclass defaults, not the YAML's copies
