"""Ctrl-C (SIGINT) in the CLI and the jobs: Spark's jobs stop, the command's own clean-up runs, and
the user gets one line and exit code 130.

PySpark's SIGINT handler cancels Spark's jobs *on the py4j connection the interrupted call is reading
from*, which breaks that connection (``RuntimeError: reentrant call``): every later JVM call fails, so
a write cannot remove its staging folder. :func:`interrupts` replaces it, for the duration of one
command, with a handler that

* raises :class:`KeyboardInterrupt` at once where that is safe: Python code outside a JVM call,
  outside PySpark once a JVM is up (see :func:`_inside_spark`) and outside any clean-up (an
  ``except``/``finally`` block or a context manager's exit in progress);
* otherwise (a JVM call in progress) cancels Spark's jobs from another thread — the main thread's
  call then returns with Spark's error — and keeps asking until the main thread reaches a safe point,
  where the :class:`KeyboardInterrupt` is raised.

Either way the exception unwinds through the command's ``finally`` blocks (a write removes its
staging folder; a ledger charge that counts stays counted), and :func:`interrupts` reports it.
"""

from __future__ import annotations

import _thread
import signal
import sys
import threading
from contextlib import contextmanager

EXIT_INTERRUPTED = 128 + signal.SIGINT  # what a shell reports for a process ended by Ctrl-C

_POLL_SECONDS = 0.1


class _Guard:
    """The state of one command's interrupt handling (see the module docstring)."""

    def __init__(self):
        self.requested = False  # Ctrl-C was pressed
        self.delivered = False  # the KeyboardInterrupt was raised in the main thread
        self.finished = False  # the command's outcome is decided (being reported): nothing to interrupt
        self.done = threading.Event()  # the command has returned or unwound
        self.written: list[str] = []  # outputs committed before the interrupt (see note_output)

    def handle(self, signum, frame) -> None:
        if self.delivered or self.finished or self.done.is_set():
            return  # unwinding or reporting already: let it finish
        if not self.requested:
            self.requested = True
            threading.Thread(target=self._stop_spark, name="spark-synth-interrupt", daemon=True).start()
        if _inside_spark(frame) or sys.exc_info()[0] is not None:
            return  # not safe here: the thread cancels Spark's jobs and asks again
        self.delivered = True
        raise KeyboardInterrupt

    def _stop_spark(self) -> None:
        """Cancel Spark's jobs (on this thread's own JVM connection), again and again until the main
        thread has taken the interrupt: a job started meanwhile is cancelled too."""
        while not (self.done.is_set() or self.delivered or self.finished):
            _cancel_spark_jobs()
            if self.done.wait(_POLL_SECONDS) or self.delivered or self.finished:
                return
            # runs `handle` in the main thread at its next step; never PySpark's own handler, which a
            # new SparkContext installs until `reclaim` puts this one back (it breaks the py4j connection)
            if signal.getsignal(signal.SIGINT) == self.handle:
                _thread.interrupt_main(signal.SIGINT)


_active: _Guard | None = None


@contextmanager
def interrupts():
    """Handle Ctrl-C for the body (main thread only; elsewhere a no-op). Yields the guard, whose
    ``requested`` says whether Ctrl-C was pressed — a Spark error raised after it is its consequence."""
    global _active
    if threading.current_thread() is not threading.main_thread():
        yield _Guard()
        return
    guard, previous = _Guard(), signal.getsignal(signal.SIGINT)
    _active = guard
    signal.signal(signal.SIGINT, guard.handle)
    try:
        yield guard
    finally:
        guard.done.set()
        _active = None
        signal.signal(signal.SIGINT, previous)


def reclaim() -> None:
    """Put the command's handler back after something replaced it (a new SparkContext installs
    PySpark's own): :func:`spark_synth.session.get_spark` calls it once the session is up."""
    if _active is not None and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, _active.handle)


def note_output(target: str) -> None:
    """Record that an output was committed at ``target`` (what an interrupted command wrote)."""
    if _active is not None:
        _active.written.append(str(target))


def message(guard: _Guard) -> str:
    """The one line an interrupted command ends with."""
    if not guard.written:
        return "interrupted; nothing was written"
    return f"interrupted after writing {', '.join(guard.written)} (its MLflow records may be incomplete)"


def _inside_spark(frame) -> bool:
    """Whether the main thread is inside py4j (a call to the JVM, reading its answer) or, once a JVM is
    up, inside PySpark: its exchanges with the JVM are not safe to cut short. ``toArrow``/``toPandas``
    (``_collect_as_arrow``) get a one-shot socket server from the JVM, connect to it and, in a
    ``finally``, join it with ``getResult()``, which has no timeout: a KeyboardInterrupt raised before
    the connection is authenticated leaves that server's result never set (it gives up accepting after
    15 s without completing it), and the ``finally`` waits for ever. Cancelled from the other thread
    instead, PySpark's call returns or raises by itself; the interrupt is raised in the caller's code.
    (While the JVM starts — no SparkContext yet — PySpark only waits for it: interrupted at once.)"""
    jvm = _jvm_up()
    while frame is not None:
        package = str(frame.f_globals.get("__name__") or "").partition(".")[0]
        if package == "py4j" or "py4j" in frame.f_code.co_filename or (jvm and package == "pyspark"):
            return True
        frame = frame.f_back
    return False


def _jvm_up() -> bool:
    """Whether this process has a (classic) SparkContext, i.e. PySpark talks to a JVM of its own."""
    pyspark = sys.modules.get("pyspark")
    return getattr(getattr(pyspark, "SparkContext", None), "_active_spark_context", None) is not None


def _cancel_spark_jobs() -> None:
    """Cancel every running Spark job of this process (classic session or Spark Connect)."""
    try:
        from pyspark import SparkContext
        from pyspark.sql import SparkSession
    except ImportError:
        return
    try:
        context = SparkContext._active_spark_context
        if context is not None:
            context.cancelAllJobs()
            return
        session = SparkSession.getActiveSession()
        if session is not None and hasattr(session, "interruptAll"):
            session.interruptAll()
    except Exception:  # noqa: BLE001 (a JVM going down: nothing left to cancel)
        pass
