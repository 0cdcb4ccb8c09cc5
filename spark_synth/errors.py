"""Every exception spark-synth raises, grouped by who must act.

* :class:`UserInputError` and subclasses — the caller passed something wrong (a parameter, a
  schema, the data, an output location); the message names it and says how to fix it.
* :class:`BudgetExhausted` — a privacy budget would be exceeded; nothing was released.
* :class:`InternalError` — a broken invariant inside spark-synth: this is a bug.

And one warning: :class:`UnrecordedSpendWarning` — budget was spent and no ledger recorded it.
"""

from __future__ import annotations


class SparkSynthError(Exception):
    """Base class of all spark-synth errors."""


class UserInputError(SparkSynthError, ValueError):
    """Something the user supplied is invalid; the message says what and how to fix it."""


class ParameterError(UserInputError):
    """A parameter is out of its allowed range."""

    def __init__(self, name: str, allowed: str, value: object):
        self.name, self.allowed, self.value = name, allowed, value
        super().__init__(f"parameter '{name}' must be {allowed}; got {value!r}")


class SchemaError(UserInputError):
    """The schema file is malformed or declares something unsupported."""


class DataValidationError(UserInputError):
    """The data does not match its schema (columns, types, or domain)."""


class InputNotFoundError(UserInputError):
    """The input table or file does not exist."""


class OutputError(UserInputError):
    """The output location cannot be written (exists already, not writable, bad format)."""


class NotFittedError(UserInputError):
    """A synthesizer was asked to sample before it was fitted."""


class BudgetExhausted(SparkSynthError):
    """A privacy-budget request exceeds what is left; nothing was measured or released."""


class InternalError(SparkSynthError, AssertionError):
    """An internal invariant failed. This is a bug in spark-synth: please report it."""

    def __init__(self, message: str):
        super().__init__(f"{message} (this is a bug in spark-synth; please report it)")


class UnrecordedSpendWarning(UserWarning):
    """A fit spent privacy budget that no budget ledger records (``Synthesizer.fit`` without
    ``dataset_id``): ``spark-synth budget`` does not count it. Issued once per table and process."""
