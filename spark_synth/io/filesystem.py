"""File-system helpers for inputs and outputs, on local paths and cluster URIs alike.

Two backends answer the same questions:

* a classic Spark session (local, spark-submit, Databricks dedicated compute) uses the JVM's Hadoop
  ``FileSystem``, so every URI the cluster can read (``dbfs:``, ``abfss:``, ``s3a:``, ``hdfs:``) works;
* a Spark Connect session (serverless and shared-access Databricks compute, ``builder.remote(...)``)
  has no JVM on the client: paths are opened from the client with ``pyarrow.fs`` — local paths,
  Unity Catalog volumes (``/Volumes/...``), ``dbfs:/`` through its ``/dbfs`` mount, and the object
  stores pyarrow reaches with ambient credentials (``s3://``, ``gs://``, ``abfs://``).
"""

from __future__ import annotations

import os


def is_spark_connect(spark) -> bool:
    """Whether ``spark`` is a Spark Connect session (no ``sparkContext``, no JVM on this side)."""
    return type(spark).__module__.startswith("pyspark.sql.connect")


def exists(spark, path: str) -> bool:
    return _backend(spark).exists(path)


def is_directory(spark, path: str) -> bool:
    return _backend(spark).is_directory(path)


def qualified(spark, path: str) -> str:
    """The fully qualified form of ``path`` (``file:/tmp/x`` for a local one)."""
    return _backend(spark).qualified(path)


def delete(spark, path: str) -> None:
    """Delete a file or a folder with everything in it (nothing when absent)."""
    _backend(spark).delete(path)


def rename(spark, source: str, destination: str) -> bool:
    """Move ``source`` to ``destination``, which must not exist (callers check); False when nothing moved."""
    return _backend(spark).rename(source, destination)


def list_names(spark, path: str) -> list[str]:
    """Names of the entries of directory ``path`` (empty when it does not exist)."""
    return _backend(spark).list_names(path)


def data_files(spark, folder: str, limit: int) -> list[tuple[str, int]]:
    """(path relative to ``folder``, size) of up to ``limit`` data files anywhere under ``folder``; like
    Spark, names starting with ``_`` or ``.`` (``_SUCCESS``, ``.crc`` files, hidden folders) are skipped,
    partition folders (``_x=1``) are not."""
    return _backend(spark).data_files(folder, limit)


def _visible(relative: str) -> bool:
    return not any(part.startswith(("_", ".")) and "=" not in part for part in relative.split("/"))


def size(spark, path: str) -> int:
    """The size of file ``path`` in bytes."""
    return _backend(spark).size(path)


def read_head(spark, path: str, count: int) -> bytes:
    """The first ``count`` bytes of file ``path`` (fewer when it is shorter)."""
    return _backend(spark).read_head(path, count)


def first_lines(spark, path: str, count: int) -> list[str]:
    """The first ``count`` lines of UTF-8 text file ``path`` (fewer when it is shorter)."""
    return _backend(spark).first_lines(path, count)


def _backend(spark):
    return _ArrowFileSystem() if is_spark_connect(spark) else _HadoopFileSystem(spark)


class _HadoopFileSystem:
    """The JVM's Hadoop FileSystem, through the classic session's py4j gateway."""

    def __init__(self, spark) -> None:
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _resolve(self, path: str):
        jpath = self._jvm.org.apache.hadoop.fs.Path(path)
        return jpath, jpath.getFileSystem(self._conf)

    def exists(self, path: str) -> bool:
        jpath, fs = self._resolve(path)
        return bool(fs.exists(jpath))

    def is_directory(self, path: str) -> bool:
        jpath, fs = self._resolve(path)
        return bool(fs.exists(jpath) and fs.getFileStatus(jpath).isDirectory())

    def qualified(self, path: str) -> str:
        jpath, fs = self._resolve(path)
        return str(fs.makeQualified(jpath).toString())

    def delete(self, path: str) -> None:
        jpath, fs = self._resolve(path)
        if fs.exists(jpath):
            fs.delete(jpath, True)

    def rename(self, source: str, destination: str) -> bool:
        src, fs = self._resolve(source)
        dst, _ = self._resolve(destination)
        return bool(fs.rename(src, dst))

    def list_names(self, path: str) -> list[str]:
        jpath, fs = self._resolve(path)
        if not fs.exists(jpath):
            return []
        return [str(status.getPath().getName()) for status in fs.listStatus(jpath)]

    def data_files(self, folder: str, limit: int) -> list[tuple[str, int]]:
        jpath, fs = self._resolve(folder)
        root = str(fs.makeQualified(jpath).toUri().getPath()).rstrip("/")
        found = []
        files = fs.listFiles(jpath, True)
        while files.hasNext() and len(found) < limit:
            status = files.next()
            relative = str(status.getPath().toUri().getPath())[len(root):].lstrip("/")
            if _visible(relative):
                found.append((relative, int(status.getLen())))
        return found

    def size(self, path: str) -> int:
        jpath, fs = self._resolve(path)
        return int(fs.getFileStatus(jpath).getLen())

    def read_head(self, path: str, count: int) -> bytes:
        jpath, fs = self._resolve(path)
        stream = fs.open(jpath)
        try:
            return bytes(stream.readNBytes(count))
        finally:
            stream.close()

    def first_lines(self, path: str, count: int) -> list[str]:
        jpath, fs = self._resolve(path)
        reader = self._jvm.java.io.BufferedReader(self._jvm.java.io.InputStreamReader(fs.open(jpath), "UTF-8"))
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


class _ArrowFileSystem:
    """The client's view of the same paths, through ``pyarrow.fs`` (Spark Connect: no JVM here)."""

    @staticmethod
    def _resolve(path: str):
        from pyarrow import fs

        if path.startswith("dbfs:"):  # Databricks mounts DBFS at /dbfs on the driver and in notebooks
            path = "/dbfs/" + path[len("dbfs:"):].lstrip("/")
        if path.startswith("file:"):
            path = "/" + path[len("file:"):].lstrip("/")
        if "://" not in path:
            return fs.LocalFileSystem(), os.path.abspath(os.path.expanduser(path))
        return fs.FileSystem.from_uri(path)

    def _type(self, path: str):
        filesystem, inner = self._resolve(path)
        return filesystem.get_file_info(inner).type

    def exists(self, path: str) -> bool:
        from pyarrow.fs import FileType

        return self._type(path) != FileType.NotFound

    def is_directory(self, path: str) -> bool:
        from pyarrow.fs import FileType

        return self._type(path) == FileType.Directory

    def qualified(self, path: str) -> str:
        filesystem, inner = self._resolve(path)
        return "file:" + inner if filesystem.type_name == "local" else path.rstrip("/")

    def delete(self, path: str) -> None:
        from pyarrow.fs import FileType

        filesystem, inner = self._resolve(path)
        kind = filesystem.get_file_info(inner).type
        if kind == FileType.Directory:
            filesystem.delete_dir(inner)
        elif kind != FileType.NotFound:
            filesystem.delete_file(inner)

    def rename(self, source: str, destination: str) -> bool:
        filesystem, src = self._resolve(source)
        _, dst = self._resolve(destination)
        if self.exists(destination) or not self.exists(source):
            return False
        try:
            filesystem.move(src, dst)
        except OSError:
            return False
        return True

    def list_names(self, path: str) -> list[str]:
        from pyarrow.fs import FileSelector

        filesystem, inner = self._resolve(path)
        if not self.is_directory(path):
            return []
        return [info.base_name for info in filesystem.get_file_info(FileSelector(inner))]

    def data_files(self, folder: str, limit: int) -> list[tuple[str, int]]:
        from pyarrow.fs import FileSelector, FileType

        filesystem, inner = self._resolve(folder)
        root = inner.rstrip("/")
        infos = filesystem.get_file_info(FileSelector(inner, recursive=True))
        files = [(info.path[len(root):].lstrip("/"), int(info.size)) for info in infos if info.type == FileType.File]
        return sorted(f for f in files if _visible(f[0]))[:limit]

    def size(self, path: str) -> int:
        filesystem, inner = self._resolve(path)
        return int(filesystem.get_file_info(inner).size)

    def read_head(self, path: str, count: int) -> bytes:
        filesystem, inner = self._resolve(path)
        with filesystem.open_input_stream(inner) as stream:
            return stream.read(count)

    def first_lines(self, path: str, count: int) -> list[str]:
        filesystem, inner = self._resolve(path)
        with filesystem.open_input_stream(inner) as stream:
            text = stream.read().decode("utf-8")
        return text.splitlines()[:count]
