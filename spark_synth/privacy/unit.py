"""The privacy unit: what one neighbouring step adds or removes — one row, or one unit (a person,
a customer) with all of its rows, at most ``max_rows`` of them after contribution bounding.

Every guarantee spark-synth states is about one :class:`PrivacyUnit`. Under a unit of column
``c`` with bound K, the fit first keeps at most K rows of each value of ``c`` (chosen by a
salted hash of each row, so a unit's kept rows depend on its own rows only — see
:mod:`spark_synth.measure.bounding`); a neighbour then differs by at most K rows, and every
query's sensitivity is K times its one-row sensitivity (triangle inequality: a sum over rows
changes by at most the sum of K rows' largest contributions). The mechanisms scale by
:attr:`PrivacyUnit.max_rows` in one place (:mod:`spark_synth.privacy.mechanisms`); queries keep
stating their one-row sensitivity.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..errors import ParameterError

#: The relation of a row-level guarantee, word for word as the reports have always stated it.
ROW_RELATION = "add/remove one row"
#: Largest accepted ``max_rows`` (a bound past it adds noise K times the data's own scale).
MAX_ROWS_PER_UNIT = 10**6


@dataclass(frozen=True)
class PrivacyUnit:
    """``column`` None: one row (``max_rows`` 1). Else: one value of ``column`` with at most
    ``max_rows`` rows (public, chosen before the fit)."""

    column: str | None = None
    max_rows: int = 1

    def __post_init__(self) -> None:
        k = self.max_rows
        if self.column is None:
            if k != 1:
                raise ParameterError("max_rows_per_unit (--max-rows-per-unit)",
                                     "only with a privacy unit column (--privacy-unit COLUMN)", k)
            return
        if not isinstance(self.column, str) or not self.column.strip():
            raise ParameterError("privacy_unit (--privacy-unit)", "the name of the column that identifies a person", self.column)
        if isinstance(k, bool) or not isinstance(k, int) or not 1 <= k <= MAX_ROWS_PER_UNIT:
            raise ParameterError("max_rows_per_unit (--max-rows-per-unit)",
                                 f"a whole number in [1, {MAX_ROWS_PER_UNIT}], required with a privacy unit: the most "
                                 "rows of one unit the fit keeps (public; see docs/privacy.md, 'Choosing K')", k)

    @classmethod
    def of(cls, column: str | None, max_rows: int | None) -> "PrivacyUnit":
        """The unit from the user's two options; a bound without a column, or a column without its
        bound, is refused (K is never guessed)."""
        if column is None:
            if max_rows is not None:
                raise ParameterError("max_rows_per_unit (--max-rows-per-unit)",
                                     "only with a privacy unit column (--privacy-unit COLUMN)", max_rows)
            return ROW
        if max_rows is None:
            raise ParameterError("max_rows_per_unit (--max-rows-per-unit)",
                                 f"a whole number >= 1 with --privacy-unit {column}: the most rows one unit may keep "
                                 "(public; it is never derived from the data)", None)
        return cls(column, max_rows)

    @property
    def is_row(self) -> bool:
        return self.column is None

    @property
    def relation(self) -> str:
        """The neighbouring relation in words (reports, tags, provenance)."""
        if self.column is None:
            return ROW_RELATION
        rows = "row" if self.max_rows == 1 else "rows"
        return f"add/remove one unit of `{self.column}`, at most {self.max_rows} {rows} each"

    @property
    def ledger_key(self) -> str:
        """The relation a ledger entry is composed under: '' for rows, else the unit's column."""
        return self.column or ""

    def to_dict(self) -> dict:
        return {"column": self.column, "max_rows_per_unit": self.max_rows}

    @classmethod
    def from_dict(cls, raw: object) -> "PrivacyUnit":
        if raw is None:
            return ROW
        if not isinstance(raw, dict) or "column" not in raw or "max_rows_per_unit" not in raw:
            raise ValueError(f"a privacy unit is {{'column': ..., 'max_rows_per_unit': ...}}; got {raw!r}")
        return cls(raw["column"], raw["max_rows_per_unit"])


#: The row-level unit: add/remove one row.
ROW = PrivacyUnit()
