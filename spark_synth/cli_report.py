"""How a command ends: its summary as one strict-JSON line and exit 0, or one error line on stderr
and exit 2 (bad input), 1 (internal or Spark failure) or 130 (Ctrl-C). Shared by the CLI and the
spark-submit jobs.
"""

from __future__ import annotations

import json
import math
import sys
import traceback

from .errors import InternalError, SparkSynthError
from .interrupt import EXIT_INTERRUPTED, interrupts

EXIT_USER_ERROR = 2
EXIT_INTERNAL_ERROR = 1


def run_and_report(action, debug: bool = False) -> int:
    """Call ``action()``; print its summary as one JSON line (exit 0) or one error line (exit 2 / 1).

    Shared by the CLI and the spark-submit jobs in ``jobs/`` so both behave the same way. Progress
    lines (``spark-synth: ...``, see :mod:`spark_synth.logs`) go to stderr; a Spark JVM started
    meanwhile writes its console output to a log file (:func:`~spark_synth.session.jvm_console_to_log`).
    ``debug`` first says that its output is not covered by the guarantee, shows DEBUG records, and
    prints the whole Python traceback (with the Java stack trace of a Spark failure) before the error line.
    """
    from .logs import DEBUG_NOTICE, show_progress
    from .session import jvm_console_to_log

    if debug:
        print(DEBUG_NOTICE, file=sys.stderr)
    show_progress(debug)
    with interrupts() as interrupt:
        try:
            with jvm_console_to_log():
                summary = action()
            interrupt.finished = True  # decided: a Ctrl-C from here on (the exit below) changes nothing
        except BaseException as exc:
            interrupt.finished = True  # decided: no KeyboardInterrupt between this block and the exit
            if not interrupt.requested and isinstance(exc, (KeyboardInterrupt, SystemExit)):
                raise
            return _report_failure(exc, interrupt, debug)
    print(json.dumps(strict_json(summary), default=str, allow_nan=False))
    return 0


def strict_json(value):
    """``value`` with every non-finite float written as the string ``"Infinity"``, ``"-Infinity"`` or
    ``"NaN"`` (``float()`` reads them back): the JSON line stays strict JSON that jq and other parsers
    accept — an unbounded per-unit ε in the ledger is infinite, for one."""
    if isinstance(value, float) and not math.isfinite(value):
        return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    return value


def _report_failure(exc: BaseException, interrupt, debug: bool) -> int:
    """The one error line of a failed command, and its exit code. After Ctrl-C any failure is its
    consequence (a cancelled Spark job, a KeyboardInterrupt): one line and exit 130."""
    from .interrupt import message
    from .session import jvm_console_log

    if debug:
        traceback.print_exc(file=sys.stderr)
    if interrupt.requested:
        print(f"spark-synth: {message(interrupt)}", file=sys.stderr)
        return EXIT_INTERRUPTED
    if isinstance(exc, SparkSynthError):
        print(f"spark-synth: error: {_one_line(exc)}", file=sys.stderr)
        return EXIT_INTERNAL_ERROR if isinstance(exc, InternalError) else EXIT_USER_ERROR
    # Spark/Java failures: one line, no stack dump of private values (unless --debug)
    log = jvm_console_log()
    where = f" (Spark's log: {log})" if log is not None else ""
    print(f"spark-synth: error: {type(exc).__name__}: {_one_line(exc)}{where}", file=sys.stderr)
    return EXIT_INTERNAL_ERROR


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__
