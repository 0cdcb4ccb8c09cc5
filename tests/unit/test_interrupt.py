"""Where :mod:`spark_synth.interrupt` raises the KeyboardInterrupt, and where it never does (the
processes and the Spark job are in tests/integration/test_interrupt.py)."""

from __future__ import annotations

import signal
import sys

import pytest

from spark_synth import interrupt
from spark_synth.interrupt import interrupts


def _frame_in(module: str):
    """A frame of code whose module is ``module``."""
    namespace = {"__name__": module, "sys": sys}
    exec("def here():\n    return sys._getframe()", namespace)
    return namespace["here"]()


def test_pyspark_is_no_safe_point_once_a_jvm_is_up(monkeypatch):
    """Inside PySpark a KeyboardInterrupt can cut a JVM exchange in two (toArrow's socket server is then
    joined for ever): the interrupt waits for our code, once a SparkContext exists."""
    pyspark_frame = _frame_in("pyspark.sql.pandas.conversion")
    monkeypatch.setattr(interrupt, "_jvm_up", lambda: True)
    assert interrupt._inside_spark(pyspark_frame)
    assert interrupt._inside_spark(_frame_in("py4j.clientserver"))
    assert not interrupt._inside_spark(sys._getframe())
    monkeypatch.setattr(interrupt, "_jvm_up", lambda: False)  # the JVM starting: PySpark only waits for it
    assert not interrupt._inside_spark(pyspark_frame)
    assert interrupt._inside_spark(_frame_in("py4j.java_gateway"))


def test_no_interrupt_once_the_outcome_is_decided():
    """Between the command's end and the end of `interrupts` (run_and_report sets ``finished``) a Ctrl-C,
    or the cancelling thread asking again, raises nothing: exit 130 or 0, never an uncaught interrupt."""
    try:
        with interrupts() as guard:
            guard.finished = True
            guard.handle(signal.SIGINT, sys._getframe())  # a safe point: raised here before `finished`
    except KeyboardInterrupt:
        pytest.fail("KeyboardInterrupt after the outcome was decided")
    assert not guard.requested and not guard.delivered
