"""The client-side file system (Spark Connect: no JVM here) answers exactly as Hadoop's does."""

import pytest

from spark_synth.io import filesystem
from spark_synth.io.filesystem import _ArrowFileSystem, _HadoopFileSystem

pytestmark = pytest.mark.spark


@pytest.fixture
def tree(tmp_path):
    (tmp_path / "t" / "part=1").mkdir(parents=True)
    (tmp_path / "t" / "_delta_log").mkdir()
    (tmp_path / "t" / "a.csv").write_bytes(b"x,y\n1,2\n3,4\n")
    (tmp_path / "t" / "part=1" / "b.csv").write_bytes(b"x,y\n5,6\n")
    (tmp_path / "t" / "_delta_log" / "00000000000000000000.json").write_text('{"commitInfo":{}}\n{"protocol":{}}\n')
    (tmp_path / "t" / ".hidden").write_bytes(b"z")
    (tmp_path / "t" / "_SUCCESS").write_bytes(b"")
    return tmp_path


def test_both_backends_give_the_same_answers(spark, tree):
    hadoop, arrow = _HadoopFileSystem(spark), _ArrowFileSystem()
    t = str(tree / "t")
    for fs in (hadoop, arrow):
        assert fs.exists(t) and fs.is_directory(t) and not fs.is_directory(t + "/a.csv")
        assert not fs.exists(t + "/missing")
        assert fs.size(t + "/a.csv") == 12
        assert fs.read_head(t + "/a.csv", 3) == b"x,y"
        assert fs.first_lines(t + "/_delta_log/00000000000000000000.json", 1) == ['{"commitInfo":{}}']
    assert hadoop.qualified(t) == arrow.qualified(t) == f"file:{t}"
    assert sorted(hadoop.list_names(t)) == sorted(arrow.list_names(t)) == [".hidden", "_SUCCESS", "_delta_log",
                                                                          "a.csv", "part=1"]
    assert sorted(hadoop.data_files(t, 10)) == arrow.data_files(t, 10) == [("a.csv", 12), ("part=1/b.csv", 8)]
    assert hadoop.list_names(t + "/missing") == arrow.list_names(t + "/missing") == []


@pytest.mark.parametrize("backend", ["hadoop", "arrow"])
def test_rename_and_delete(spark, tree, backend):
    fs = _HadoopFileSystem(spark) if backend == "hadoop" else _ArrowFileSystem()
    t, moved = str(tree / "t"), str(tree / "moved")
    assert fs.rename(t, moved) and not fs.exists(t) and fs.exists(moved + "/part=1/b.csv")
    fs.delete(moved + "/a.csv")
    assert not fs.exists(moved + "/a.csv")
    fs.delete(moved)
    fs.delete(moved)  # absent: nothing to do
    assert not fs.exists(moved)


def test_a_classic_session_uses_hadoop(spark):
    assert not filesystem.is_spark_connect(spark)
    assert isinstance(filesystem._backend(spark), _HadoopFileSystem)
