"""Logging: one ``spark_synth.<layer>`` logger per layer (``measure``, ``engines``, ``sample``, ``io``,
``track``, ``evaluate``); the library itself only emits records, never prints.

Progress records (level INFO) state what stage runs and public or DP values only — stage names,
pass and round numbers, query counts, losses of fits to noisy measurements — never timings, row
counts or exact answers, so a run's progress lines are part of what its DP guarantee covers. The
CLI and the jobs show them on stderr (:func:`show_progress`); a notebook sees them after
``logging.basicConfig(level=logging.INFO)``. ``--debug`` adds DEBUG records and full stack traces,
which are NOT covered by the guarantee.
"""

from __future__ import annotations

import logging
import sys

#: The root of every spark-synth logger.
ROOT = "spark_synth"
#: Printed first by ``--debug``.
DEBUG_NOTICE = ("spark-synth: --debug output (DEBUG records, Python and Java stack traces) is NOT covered by the DP "
                "guarantee: it may show timings, data-dependent values and parts of rows")


def layer(name: str) -> logging.Logger:
    """The logger of one layer, e.g. ``layer("measure")`` → ``spark_synth.measure``."""
    return logging.getLogger(f"{ROOT}.{name}")


class _CurrentStderr(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is when a record is emitted (pytest and notebooks swap it)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:  # StreamHandler.__init__ assigns it; the property wins
        pass


def show_progress(debug: bool = False) -> None:
    """Show spark-synth's records on stderr (``spark-synth: <message>``); DEBUG ones too under ``debug``.
    Idempotent: calling it again replaces the handler it added before."""
    root = logging.getLogger(ROOT)
    for handler in [h for h in root.handlers if isinstance(h, _CurrentStderr)]:
        root.removeHandler(handler)
    handler = _CurrentStderr()
    handler.setFormatter(logging.Formatter("spark-synth: %(name)s: %(message)s" if debug else "spark-synth: %(message)s"))
    root.addHandler(handler)
    root.setLevel(logging.DEBUG if debug else logging.INFO)
    root.propagate = False


logging.getLogger(ROOT).addHandler(logging.NullHandler())
