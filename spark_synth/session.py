"""The one Spark session factory: Delta Lake enabled, small-machine defaults, or the given session.

* Inside spark-submit, a notebook or Databricks (a session already exists), that session is used.
* Otherwise a local session is built from a Spark profile (default ``local``; packaged in
  ``spark_synth/conf/spark/``, overridable through ``$SPARK_SYNTH_CONF``) with the
  warehouse, Delta tables and metastore under :func:`spark_synth_home`. The Delta Lake jars come
  through Spark's ``spark.jars.packages`` (resolved from Maven once, then cached by Ivy), or from
  pre-downloaded jars named in ``SPARK_SYNTH_DELTA_JARS`` (comma-separated paths).
* A JVM started here is quiet: its log4j2 configuration is :data:`LOG4J2_FILE` (WARN and above,
  start-up notices that need no action left out) unless the user names one; a local master binds
  to 127.0.0.1 unless ``SPARK_LOCAL_IP`` is set; and what the JVM prints while it starts (Ivy's
  dependency report, JVM notices) goes to ``SPARK_SYNTH_HOME/logs/spark-driver.log``. After that its
  console output reaches stderr as usual — or, under the CLI (:func:`jvm_console_to_log`), the log
  file only.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from contextlib import contextmanager
from pathlib import Path

import yaml

from . import conf
from .errors import ParameterError
from .interrupt import reclaim as reclaim_interrupts

#: Whether a Spark JVM started by :func:`get_spark` sends its console output to a log file (see
#: :func:`jvm_console_to_log`), and the file it went to.
_JVM_CONSOLE: dict = {"to_log": False, "log": None}
#: The log file of a JVM started under :func:`jvm_console_to_log`, relative to :func:`spark_synth_home`.
JVM_LOG = Path("logs") / "spark-driver.log"
#: The log4j2 configuration of a JVM that :func:`get_spark` starts (packaged; ``$SPARK_SYNTH_CONF/spark/``
#: may hold its own). Under spark-submit name it yourself: ``--driver-java-options
#: -Dlog4j2.configurationFile=spark_synth/conf/spark/log4j2.properties`` (README, spark-submit).
LOG4J2_FILE = "log4j2.properties"


@contextmanager
def jvm_console_to_log():
    """While active, a Spark JVM that :func:`get_spark` starts writes its console output (Ivy's
    dependency report, log4j warnings and errors, JVM notices) to ``SPARK_SYNTH_HOME/logs/spark-driver.log``
    instead of the terminal, for its whole life. The CLI uses it so that a failure is ONE line on
    stderr. An existing session (spark-submit, notebooks, tests) is not touched."""
    previous = _JVM_CONSOLE["to_log"]
    _JVM_CONSOLE["to_log"] = True
    try:
        yield
    finally:
        _JVM_CONSOLE["to_log"] = previous


def jvm_console_log() -> Path | None:
    """The file a JVM started by this process writes its console output to, if it was redirected."""
    return _JVM_CONSOLE["log"]


@contextmanager
def _jvm_console_redirected():
    """Point file descriptors 1 and 2 at the JVM log while the JVM is launched (it inherits them).

    Under :func:`jvm_console_to_log` the JVM keeps writing there for its whole life. Otherwise it
    writes into a pipe: what arrives while it starts (Ivy's report, JVM notices) goes to the log
    file only, and from the moment the session is up everything goes to the log file and to the
    stderr this process had (:class:`_ConsoleRelay`)."""
    path = spark_synth_home() / JVM_LOG
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        log = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError:  # an unwritable home: keep the console output rather than fail
        yield
        return
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    relay = None
    if _JVM_CONSOLE["to_log"]:
        target = log
    else:
        relay = _ConsoleRelay(log, os.dup(2))
        target = relay.write_end
    saved = [os.dup(1), os.dup(2)]
    try:
        os.dup2(target, 1)
        os.dup2(target, 2)
        if relay is None:
            _JVM_CONSOLE["log"] = path
        yield
    finally:
        for stream in (sys.stdout, sys.stderr):
            try:
                stream.flush()
            except (OSError, ValueError):
                pass
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        for fd in saved:
            os.close(fd)
        if relay is None:
            os.close(log)
        else:
            relay.started()  # the JVM (if it started) holds the pipe now: from here on, stderr too


class _ConsoleRelay:
    """A pipe whose lines a daemon thread copies to the JVM log and — once :meth:`started` — also to
    ``stderr_fd``. It ends when every writer (the JVM and its children) has closed the pipe."""

    def __init__(self, log_fd: int, stderr_fd: int) -> None:
        read_end, self.write_end = os.pipe()
        self._log, self._stderr, self._forward = log_fd, stderr_fd, threading.Event()
        self._thread = threading.Thread(target=self._copy, args=(read_end,), name="spark-synth-jvm-console",
                                        daemon=True)
        self._thread.start()

    def started(self) -> None:
        os.close(self.write_end)  # only the JVM writes from now on
        self._forward.set()

    def _copy(self, read_end: int) -> None:
        with os.fdopen(read_end, "rb", buffering=0) as pipe:
            for line in iter(pipe.readline, b""):
                for fd in (self._log, self._stderr) if self._forward.is_set() else (self._log,):
                    try:
                        os.write(fd, line)
                    except OSError:
                        pass
        for fd in (self._log, self._stderr):
            try:
                os.close(fd)
            except OSError:
                pass


def _quiet_jvm_options(spark_conf: dict) -> list[str]:
    """``-Dlog4j2.configurationFile=…`` for a JVM started here, unless the user chose a log4j
    configuration (in the profile's or the caller's Java options, or ``$SPARK_CONF_DIR``)."""
    options = " ".join(spark_conf.get(key, "") for key in ("spark.driver.extraJavaOptions", "spark.driver.defaultJavaOptions"))
    conf_dir = os.environ.get("SPARK_CONF_DIR")
    if "log4j2.configurationFile" in options or "log4j.configurationFile" in options or (
            conf_dir and any((Path(conf_dir) / name).is_file() for name in ("log4j2.properties", "log4j2.xml"))):
        return []
    path = log4j2_file()
    return [f"-Dlog4j2.configurationFile={path.as_uri()}"] if path is not None else []


def log4j2_file() -> Path | None:
    """The log4j2 configuration a JVM started by :func:`get_spark` uses: ``$SPARK_SYNTH_CONF/spark/``'s
    :data:`LOG4J2_FILE` when it holds one, else the packaged one."""
    for folder in (conf.override_dir(), conf.PACKAGED):
        if folder is not None and (folder / "spark" / LOG4J2_FILE).is_file():
            return (folder / "spark" / LOG4J2_FILE).resolve()
    return None


@contextmanager
def _local_bind_address(master: str | None, spark_conf: dict):
    """``SPARK_LOCAL_IP=127.0.0.1`` while a local JVM is launched (it inherits the environment), unless
    the user set it or a driver address: without it Spark warns that the host name resolves to a
    loopback address and binds to whatever interface it finds."""
    local = bool(master) and str(master).startswith("local")
    chosen = "SPARK_LOCAL_IP" in os.environ or any(key in spark_conf for key in ("spark.driver.host", "spark.driver.bindAddress"))
    if not local or chosen:
        yield
        return
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    try:
        yield
    finally:
        os.environ.pop("SPARK_LOCAL_IP", None)


def spark_synth_home() -> Path:
    """Project-local directory for the embedded default (``$SPARK_SYNTH_HOME`` or ``./.spark-synth``):
    the local Spark warehouse and metastore, logs, evaluation files."""
    return Path(os.environ.get("SPARK_SYNTH_HOME", ".spark-synth")).resolve()


def store_home() -> Path:
    """Where the default MLflow store lives — runs, models, the registry and every table's budget
    ledger: ``$SPARK_SYNTH_HOME`` when set, else ``~/.spark-synth``. Per user, never per working
    directory, so a table's ledger is the same wherever spark-synth is run from."""
    if os.environ.get("SPARK_SYNTH_HOME"):
        return spark_synth_home()
    return (Path.home() / ".spark-synth").resolve()


def load_profile(profile: str | Path) -> dict:
    """Read a Spark profile: a packaged name (``local``, ``cluster``; see :mod:`spark_synth.conf`) or a YAML path."""
    path = Path(profile)
    if not path.suffix:
        path = conf.find("spark", str(profile)) or path
    if not path.is_file():
        raise ParameterError("spark profile", f"one of {conf.names('spark')} or a path to a YAML file", str(profile))
    raw = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    unknown = sorted(set(raw) - {"master", "spark"})
    if unknown:
        raise ParameterError(f"spark profile '{path}' keys", "only 'master' and 'spark'", unknown)
    return {"master": raw.get("master"), "spark": {str(k): str(v) for k, v in (raw.get("spark") or {}).items()}}


def default_parallelism(spark) -> int:
    """The session's default task parallelism; under Spark Connect (no ``sparkContext``) its
    ``spark.default.parallelism`` when set, else its shuffle partitions."""
    from .io.filesystem import is_spark_connect

    if not is_spark_connect(spark):
        return int(spark.sparkContext.defaultParallelism)
    value = spark.conf.get("spark.default.parallelism", None) or spark.conf.get("spark.sql.shuffle.partitions", "2")
    return max(1, int(value))


def get_spark(profile: str | Path = "local", extra_conf: dict | None = None):
    """Return the active Spark session, or build a Delta-enabled one from ``profile``.

    ``$SPARK_REMOTE`` (pyspark's own variable) asks for Spark Connect: ``sc://host:port`` connects to
    that server as it is; ``local[N]`` starts a local Spark Connect server configured like the profile.
    """
    try:
        from pyspark.sql import SparkSession
    except ImportError:
        from .errors import UserInputError

        raise UserInputError("pyspark is not installed: on a laptop or CI machine install spark-synth[local] "
                             "(pyspark + Delta Lake + MLflow); on Databricks use the runtime's own Spark") from None

    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    if "PYSPARK_GATEWAY_PORT" in os.environ:  # launched by spark-submit: the platform configures Spark
        spark = SparkSession.builder.appName("spark-synth").getOrCreate()
        reclaim_interrupts()
        return spark
    remote = os.environ.get("SPARK_REMOTE")
    if remote and not remote.startswith("local"):  # a Spark Connect server: it is configured already
        return SparkSession.builder.remote(remote).getOrCreate()
    settings = load_profile(profile)
    # Local executors must run the same interpreter (and so see the same packages) as the driver.
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = SparkSession.builder.appName("spark-synth")
    if remote:  # a local Spark Connect server, started here with the profile's settings
        builder = builder.remote(remote)
        settings = {**settings, "master": remote}
    elif settings["master"]:
        builder = builder.master(settings["master"])
    home = spark_synth_home()
    spark_conf = {
        "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
        "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
        "spark.sql.warehouse.dir": str(home / "warehouse"),
        **settings["spark"],
        **(extra_conf or {}),
    }
    for key, value in spark_conf.items():
        builder = builder.config(key, value)
    if settings["master"]:  # local: persistent catalog under the home dir, and the Delta Lake jars
        # the profile's own JVM options are kept (the Derby home is added to them, not put in their place)
        java_options = " ".join(filter(None, [spark_conf.get("spark.driver.extraJavaOptions"), f"-Dderby.system.home={home}",
                                              *_quiet_jvm_options(spark_conf)]))
        builder = (
            builder.config("spark.sql.catalogImplementation", "hive")
            .config("spark.hadoop.javax.jdo.option.ConnectionURL", f"jdbc:derby:;databaseName={home / 'metastore_db'};create=true")
            .config("spark.driver.extraJavaOptions", java_options)
        )
        jars = os.environ.get("SPARK_SYNTH_DELTA_JARS")
        if jars:
            builder = builder.config("spark.jars", jars)
        else:
            try:
                from delta import configure_spark_with_delta_pip
            except ImportError:
                from .errors import UserInputError

                raise UserInputError("delta-spark is not installed, and a local Spark session needs it: install "
                                     "spark-synth[local], or name Delta's jars in SPARK_SYNTH_DELTA_JARS") from None
            builder = configure_spark_with_delta_pip(builder)
    with _jvm_console_redirected(), _local_bind_address(settings["master"], spark_conf), warnings.catch_warnings():
        # Spark Connect re-applies every setting at run time and warns about the static ones (set at start).
        warnings.filterwarnings("ignore", message=".*CANNOT_MODIFY_CONFIG.*")
        spark = builder.getOrCreate()
    reclaim_interrupts()  # the new SparkContext installed PySpark's SIGINT handler over the CLI's
    if not remote:
        spark.sparkContext.setLogLevel("ERROR")
    return spark
