"""Hadoop FileSystem helpers (work for local paths and cluster URIs alike)."""

from __future__ import annotations


def hadoop_path(spark, path: str):
    jvm = spark.sparkContext._jvm
    jpath = jvm.org.apache.hadoop.fs.Path(path)
    return jpath, jpath.getFileSystem(spark.sparkContext._jsc.hadoopConfiguration())


def exists(spark, path: str) -> bool:
    jpath, fs = hadoop_path(spark, path)
    return bool(fs.exists(jpath))


def is_directory(spark, path: str) -> bool:
    jpath, fs = hadoop_path(spark, path)
    return bool(fs.exists(jpath) and fs.getFileStatus(jpath).isDirectory())


def qualified(spark, path: str) -> str:
    jpath, fs = hadoop_path(spark, path)
    return str(fs.makeQualified(jpath).toString())


def delete(spark, path: str) -> None:
    jpath, fs = hadoop_path(spark, path)
    if fs.exists(jpath):
        fs.delete(jpath, True)


def rename(spark, source: str, destination: str) -> bool:
    src, fs = hadoop_path(spark, source)
    dst, _ = hadoop_path(spark, destination)
    return bool(fs.rename(src, dst))


def list_names(spark, path: str) -> list[str]:
    """Names of the entries of directory ``path`` (empty when it does not exist)."""
    jpath, fs = hadoop_path(spark, path)
    if not fs.exists(jpath):
        return []
    return [str(status.getPath().getName()) for status in fs.listStatus(jpath)]


def first_lines(spark, path: str, count: int) -> list[str]:
    """The first ``count`` lines of text file ``path`` (fewer when it is shorter)."""
    jpath, fs = hadoop_path(spark, path)
    jvm = spark.sparkContext._jvm
    reader = jvm.java.io.BufferedReader(jvm.java.io.InputStreamReader(fs.open(jpath), "UTF-8"))
    try:
        lines = []
        while len(lines) < count:
            line = reader.readLine()
            if line is None:
                break
            lines.append(str(line))
        return lines
    finally:
        reader.close()
