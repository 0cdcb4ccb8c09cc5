"""``benchmarks/wide_network.py``: seeded wide tables whose dependency network is known (no Spark).

The rows are checked with spark-synth's own schema reader and encoder, and the network's edges
against dependence measured on the rows: every edge clearly dependent, every pair the truth calls
independent not.
"""

from __future__ import annotations

import importlib.util
import sys
from collections import Counter

import numpy as np
import pandas as pd
import pytest

from spark_synth import load_schema
from spark_synth.schema.encoding import OutOfDomainPolicy, encode_frame
from tests.conftest import REPO_ROOT, SHARED_DATA

COLUMNS, ROWS, SEED = 40, 20_000, 0


def _load_generator():
    spec = importlib.util.spec_from_file_location("wide_network", REPO_ROOT / "benchmarks" / "wide_network.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the file runs
    spec.loader.exec_module(module)
    return module


wide_network = _load_generator()


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    """The 40-column table at 20 k rows: its files, schema, truth and rows (all values as text)."""
    written = wide_network.write(tmp_path_factory.mktemp("wide"), COLUMNS, ROWS, SEED)
    frame = pd.read_csv(written["csv"], dtype=str, keep_default_na=False, na_values=[""])
    return written, load_schema(written["schema.json"]), wide_network.load_truth(written["truth.json"]), frame


def _read(paths) -> dict:
    return {kind: paths[kind].read_bytes() for kind in ("csv", "schema.json", "truth.json")}


def test_same_seed_gives_the_same_bytes_and_another_seed_another_table(tmp_path):
    first = _read(wide_network.write(tmp_path / "a", 20, 3000, seed=7))
    again = _read(wide_network.write(tmp_path / "b", 20, 3000, seed=7))
    other = _read(wide_network.write(tmp_path / "c", 20, 3000, seed=8))
    assert first == again
    assert first["csv"] != other["csv"] and first["truth.json"] != other["truth.json"]


def test_the_network_does_not_depend_on_the_row_count(tmp_path):
    small = wide_network.load_truth(wide_network.write(tmp_path / "small", 20, 500, seed=3)["truth.json"])
    large = wide_network.load_truth(wide_network.write(tmp_path / "large", 20, 5000, seed=3)["truth.json"])
    assert small["columns"] == large["columns"] and small["edges"] == large["edges"]


def test_schema_loads_and_every_value_is_in_its_domain(table):
    written, schema, truth, frame = table
    assert list(frame.columns) == list(schema.names) == list(truth["columns"])
    assert len(frame) == ROWS and len(schema) == COLUMNS
    assert schema.target == truth["target"] and schema.task == "classification"
    assert schema[schema.target].type.value == "categorical"
    _, rejected = encode_frame(frame, schema, OutOfDomainPolicy.ERROR)  # refuses any value outside the domain
    assert not rejected.any(), [schema.names[j] for j in np.flatnonzero(rejected)]
    for column in schema:
        values = pd.to_numeric(frame[column.name]) if column.type.value == "integer" else None
        if values is not None:
            assert (values.dropna() == values.dropna().round()).all(), column.name
        nulls = frame[column.name].isna().mean()
        share = truth["columns"][column.name]["null_share"]
        assert column.nullable == (share > 0), column.name
        assert abs(nulls - share) < 0.01 + 0.1 * share, (column.name, nulls, share)


def test_column_kinds_and_parents_are_as_requested(table):
    _, schema, truth, _ = table
    columns = truth["columns"]
    kinds = Counter(entry["kind"] for entry in columns.values())
    assert set(kinds) == {"binary", "categorical", "wide", "ordinal", "integer", "continuous", "target"}
    assert kinds["target"] == 1 and sum(kinds.values()) == COLUMNS
    levels = {name: len(schema[name].categories) for name in columns if schema[name].type.is_discrete}
    for name, entry in columns.items():
        kind = entry["kind"]
        if kind in ("binary", "categorical", "target"):
            assert 2 <= levels[name] <= 10 and (levels[name] == 2) == (kind != "categorical"), name
        elif kind == "wide":
            assert 50 <= levels[name] <= 900, name
        elif kind == "ordinal":
            assert schema[name].type.value == "ordinal" and 3 <= levels[name] <= 12, name
        else:
            assert schema[name].type.value == kind, name
        assert len(entry["parents"]) <= 2 or kind == "target", name
        assert entry["null_share"] == 0 or 0.01 <= entry["null_share"] <= 0.20, name
    assert len(columns[truth["target"]]["parents"]) >= 3
    assert any(not entry["parents"] for entry in columns.values())
    assert 0 < sum(entry["null_share"] > 0 for entry in columns.values()) <= COLUMNS // 5
    position = {name: i for i, name in enumerate(truth["order"])}
    assert sorted(position) == sorted(columns)
    assert all(position[parent] < position[name] for name, entry in columns.items() for parent in entry["parents"])
    assert sorted((e["parent"], e["child"]) for e in truth["edges"]) == sorted(
        (parent, name) for name, entry in columns.items() for parent in entry["parents"])


def test_edges_are_clearly_dependent_and_independent_pairs_are_not(table):
    """Mutual information on spark-synth's codes, less that of a shuffled copy (the noise floor)."""
    _, schema, truth, frame = table
    codes, _ = encode_frame(frame, schema, OutOfDomainPolicy.ERROR)
    index = {name: j for j, name in enumerate(schema.names)}
    rng = np.random.default_rng(0)

    def dependence(a, b):
        x, y = codes[:, index[a]], codes[:, index[b]]
        return wide_network.mutual_information(x, y) - wide_network.mutual_information(x, rng.permutation(y))

    dependent, independent = wide_network.edge_pairs(truth)
    assert len(dependent) == len(truth["edges"]) and len(independent) > len(dependent)
    on_edges = np.array([dependence(a, b) for a, b in dependent])
    off_edges = np.array([dependence(a, b) for a, b in independent])
    assert on_edges.min() > 0.01, dependent[int(on_edges.argmin())]
    assert on_edges.min() > off_edges.max()
    assert np.median(on_edges) > 20 * np.quantile(off_edges, 0.99)
    assert abs(np.median(off_edges)) < 0.001


def test_pair_classes_follow_the_graph():
    truth = {"columns": {"a": {"parents": []}, "b": {"parents": ["a"]}, "c": {"parents": ["b"]},
                         "d": {"parents": ["a"]}, "e": {"parents": []}},
             "order": ["a", "e", "b", "d", "c"],
             "edges": [{"parent": "a", "child": "b"}, {"parent": "b", "child": "c"}, {"parent": "a", "child": "d"}]}
    classes = wide_network.pair_classes(truth)
    assert classes["edge"] == [("a", "b"), ("a", "d"), ("b", "c")]
    assert classes["indirect"] == [("a", "c"), ("b", "d"), ("c", "d")]  # a chain, a common parent, both
    assert classes["independent"] == [("a", "e"), ("b", "e"), ("c", "e"), ("d", "e")]
    assert wide_network.edge_pairs(truth) == (classes["edge"], classes["independent"])


def test_the_shared_harness_takes_the_table(table):
    bench = SHARED_DATA.parent / "bench"
    if not (bench / "harness.py").is_file():
        pytest.skip("the shared harness is not here")
    sys.path.insert(0, str(bench))
    try:
        import harness
    finally:
        sys.path.remove(str(bench))
    written, schema, _, frame = table
    coded = harness.code_table(frame, harness.Schema(written["schema.json"]))
    assert coded.n == ROWS and not any(v["invalid"] for v in coded.validity.values())


def test_cli_writes_the_three_files_and_refuses_too_few_columns(tmp_path, capsys):
    assert wide_network.main([str(tmp_path), "--columns", "12", "--rows", "50", "--seed", "1"]) == 0
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == ["network12.csv", "network12.schema.json", "network12.truth.json"]
    assert capsys.readouterr().out.count("\n") == 1
    with pytest.raises(SystemExit):
        wide_network.main([str(tmp_path), "--columns", "5"])
