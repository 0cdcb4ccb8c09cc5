"""Immutable descriptions of a table's public domain: :class:`Column` and :class:`Schema`.

The domain is public information supplied by the user (categories, bounds, bins). Nothing here is
ever derived from the private data.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from enum import Enum

import numpy as np

from ..errors import SchemaError
from .cost import PrepassCost

#: Integer columns whose range has at most this many values are measured value by value.
MAX_EXACT_INTEGER_VALUES = 128
#: Most decimal places a continuous column may round its written values to (float64 holds ~15 digits).
MAX_DECIMALS = 12
#: Default number of equal-width public bins for wider numeric columns.
DEFAULT_NUMERIC_BINS = 64
#: Widest public range ``max - min`` of a numeric column: leaves float64 headroom (≈ 1.8e308) for
#: bin edges and centres, so every value within the bounds encodes to a finite number.
MAX_BOUND_SPAN = 1e300


@dataclass(frozen=True)
class HierarchyLevel:
    """One public level of a categorical column's hierarchy: each value of the level below (the
    column's categories for the first level) mapped to exactly one parent group."""

    name: str
    parents: tuple[tuple[object, object], ...]  # (child, parent) pairs, in the children's order

    def to_dict(self) -> dict:
        return {"name": self.name, "parents": {str(child): parent for child, parent in self.parents}}


class ColumnType(str, Enum):
    """The column kinds of the schema file format.

    ``boolean``, ``date``, ``timestamp`` and ``timestamp_ntz`` are modelled as their
    :attr:`model_type`: a categorical of [false, true], an integer of days since 1970-01-01, a
    continuous of seconds since the epoch (an instant, UTC), a continuous of seconds since
    1970-01-01 00:00 on the wall clock (a local date-time without a time zone, Spark TimestampNTZ).
    """

    CATEGORICAL = "categorical"
    ORDINAL = "ordinal"
    INTEGER = "integer"
    CONTINUOUS = "continuous"
    BOOLEAN = "boolean"
    DATE = "date"
    TIMESTAMP = "timestamp"
    TIMESTAMP_NTZ = "timestamp_ntz"

    @property
    def is_discrete(self) -> bool:
        return self in (ColumnType.CATEGORICAL, ColumnType.ORDINAL, ColumnType.BOOLEAN)

    @property
    def is_temporal(self) -> bool:
        return self in (ColumnType.DATE, ColumnType.TIMESTAMP, ColumnType.TIMESTAMP_NTZ)

    @property
    def model_type(self) -> "ColumnType":
        """The kind the model side treats this one as (itself for the four basic kinds)."""
        return _MODEL_TYPE.get(self, self)


_MODEL_TYPE = {ColumnType.BOOLEAN: ColumnType.CATEGORICAL, ColumnType.DATE: ColumnType.INTEGER,
               ColumnType.TIMESTAMP: ColumnType.CONTINUOUS, ColumnType.TIMESTAMP_NTZ: ColumnType.CONTINUOUS}
#: The epoch of date and timestamp codes (days / seconds since then, UTC).
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.timezone.utc)
#: The epoch of timestamp_ntz codes: 1970-01-01 00:00 on the wall clock (no time zone).
WALL_EPOCH = dt.datetime(1970, 1, 1)
BOOLEAN_CATEGORIES = (False, True)


@dataclass(frozen=True)
class Column:
    """One column's public domain.

    Categorical/ordinal columns list their ``categories`` (in order for ordinals); integer and
    continuous columns give public ``min``/``max`` bounds and optionally ``bins``, the number of
    equal-width bins they are measured on. Boolean columns have the categories (False, True);
    date/timestamp bounds are given as ISO strings (or ``date``/``datetime``) and held as days /
    seconds since 1970-01-01 UTC (timestamp_ntz: seconds since 1970-01-01 00:00 wall clock), like
    their integer / continuous model twins. ``nullable`` columns have an extra "null" code, so
    missing values are measured and reproduced at a DP-estimated rate.
    """

    name: str
    type: ColumnType
    categories: tuple = ()
    min: float | None = None
    max: float | None = None
    bins: int | None = None
    nullable: bool = True
    hierarchy: tuple[HierarchyLevel, ...] = ()
    #: Continuous columns: decimal places of the written values (e.g. 2 for money); None keeps full precision.
    decimals: int | None = None

    def __post_init__(self) -> None:
        where = f"column '{self.name}'"
        if not isinstance(self.name, str) or not self.name:
            raise SchemaError(f"every column needs a non-empty string 'name'; got {self.name!r}")
        if self.hierarchy:
            _check_hierarchy(where, self)
        if self.type is ColumnType.BOOLEAN:
            if tuple(self.categories) not in ((), BOOLEAN_CATEGORIES):
                raise SchemaError(f"{where} is boolean; its categories are always [false, true], remove 'categories'")
            object.__setattr__(self, "categories", BOOLEAN_CATEGORIES)
        elif self.type.is_discrete:
            if len(self.categories) == 0:
                raise SchemaError(f"{where} is {self.type.value} and needs a non-empty 'categories' list")
            if len(set(self.categories)) != len(self.categories):
                raise SchemaError(f"{where} lists a category twice; categories must be unique")
            kinds = {_category_kind(c) for c in self.categories}
            if len(kinds) != 1 or None in kinds:
                raise SchemaError(
                    f"{where}: categories must be all strings, all integers or all numbers; got "
                    f"{sorted({type(c).__name__ for c in self.categories})}"
                )
        else:
            for key in ("min", "max"):
                if self.type.is_temporal:
                    object.__setattr__(self, key, _temporal_bound(where, self.type, key, getattr(self, key)))
                _check_bound(where, self.type, key, getattr(self, key))
            if not float(self.min) < float(self.max):  # as float64, which is how values are encoded
                low, high = self.to_dict()["min"], self.to_dict()["max"]
                raise SchemaError(f"{where}: 'min' ({low}) must be below 'max' ({high})")
            if not float(self.max) - float(self.min) <= MAX_BOUND_SPAN:
                raise SchemaError(f"{where}: 'max' - 'min' must be at most {MAX_BOUND_SPAN:g} so the public encoding stays "
                                  f"finite; got [{self.min}, {self.max}]. Declare narrower public bounds.")
            if self.type is ColumnType.INTEGER and (self.min != int(self.min) or self.max != int(self.max)):
                raise SchemaError(f"{where} is integer; its bounds must be whole numbers")
            if self.bins is not None and (isinstance(self.bins, bool) or not isinstance(self.bins, int) or self.bins < 1):
                raise SchemaError(f"{where}: 'bins' must be a positive integer; got {self.bins!r}")
        if self.decimals is not None:
            if self.type is not ColumnType.CONTINUOUS:
                raise SchemaError(f"{where} is {self.type.value}; only continuous columns take 'decimals' (remove it)")
            if isinstance(self.decimals, bool) or not isinstance(self.decimals, int) or not 0 <= self.decimals <= MAX_DECIMALS:
                raise SchemaError(f"{where}: 'decimals' must be a whole number from 0 to {MAX_DECIMALS} (the decimal "
                                  f"places written, e.g. 2 for money); got {self.decimals!r}")

    # ---- measurement domain -------------------------------------------------------------
    @property
    def category_kind(self) -> str | None:
        """'string', 'integer', 'float' or 'boolean' for discrete columns; None for numeric ones."""
        if self.type is ColumnType.BOOLEAN:
            return "boolean"
        return _category_kind(self.categories[0]) if self.type.is_discrete else None

    @property
    def n_values(self) -> int:
        """Number of non-null codes: categories, or public bins for numeric columns (computed once:
        workloads of thousands of marginals ask it for every query)."""
        known = self.__dict__.get("_n_values")
        if known is None:
            known = len(self.categories) if self.type.is_discrete else len(self.bin_edges) - 1
            object.__setattr__(self, "_n_values", known)
        return known

    @property
    def size(self) -> int:
        """Number of codes in the measurement domain (non-null codes, plus one for null)."""
        return self.n_values + (1 if self.nullable else 0)

    @property
    def null_code(self) -> int | None:
        """The code that stands for a missing value (the last one), or None if not nullable."""
        return self.n_values if self.nullable else None

    @property
    def bin_edges(self) -> np.ndarray:
        """Public bin edges for numeric columns (``n_values + 1`` increasing floats).

        Integer columns with at most :data:`MAX_EXACT_INTEGER_VALUES` values (and no explicit
        ``bins``) get one bin per value; otherwise ``bins`` equal-width bins over [min, max].
        """
        if self.type.is_discrete:
            raise SchemaError(f"column '{self.name}' is {self.type.value}; it has categories, not bins")
        lo, hi = float(self.min), float(self.max)
        if self.type.model_type is ColumnType.INTEGER:
            n_int = int(hi - lo) + 1
            n_bins = self.bins or (n_int if n_int <= MAX_EXACT_INTEGER_VALUES else DEFAULT_NUMERIC_BINS)
            n_bins = min(n_bins, n_int)
            return np.linspace(lo - 0.5, hi + 0.5, n_bins + 1)
        return np.linspace(lo, hi, (self.bins or DEFAULT_NUMERIC_BINS) + 1)

    def hierarchy_groupings(self) -> list[tuple[str, tuple[int, ...]]]:
        """Per hierarchy level (finest first): its name and the group of every code of this column
        (groups numbered by first appearance; the null code keeps a group of its own, the last)."""
        out, current = [], list(self.categories)
        groups_of_code = list(range(len(self.categories)))
        for level in self.hierarchy:
            parent_of = {str(child): str(parent) for child, parent in level.parents}
            parents = list(dict.fromkeys(parent_of[str(child)] for child in current))
            index = {p: i for i, p in enumerate(parents)}
            groups_of_code = [index[parent_of[str(current[g])]] for g in groups_of_code]
            null = [len(parents)] if self.nullable else []
            out.append((level.name, tuple(groups_of_code + null)))
            current = parents
        return out

    def to_dict(self) -> dict:
        out: dict = {"name": self.name, "type": self.type.value}
        if self.hierarchy:
            out["hierarchy"] = [level.to_dict() for level in self.hierarchy]
        if self.type is ColumnType.BOOLEAN:
            pass
        elif self.type.is_discrete:
            out["categories"] = list(self.categories)
        elif self.type.is_temporal:
            out["min"], out["max"] = temporal_text(self.type, self.min), temporal_text(self.type, self.max)
            if self.bins is not None:
                out["bins"] = self.bins
        else:
            out["min"], out["max"] = self.min, self.max
            if self.bins is not None:
                out["bins"] = self.bins
            if self.decimals is not None:
                out["decimals"] = self.decimals
        out["nullable"] = self.nullable
        return out


@dataclass(frozen=True)
class Schema:
    """An ordered, immutable collection of :class:`Column` plus optional dataset metadata, and the
    cost of the DP pre-pass that drafted it (``prepass``; None for a schema from public knowledge)."""

    columns: tuple[Column, ...]
    name: str | None = None
    target: str | None = None
    task: str | None = None
    prepass: PrepassCost | None = None
    _by_name: dict = field(default=None, init=False, repr=False, compare=False)
    _names: tuple = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self.columns:
            raise SchemaError("the schema declares no columns; list at least one under 'columns'")
        names = [c.name for c in self.columns]
        dupes = sorted({n for n in names if names.count(n) > 1})
        if dupes:
            raise SchemaError(f"the schema declares these columns more than once: {dupes}")
        if self.target is not None and self.target not in names:
            raise SchemaError(f"the schema's target '{self.target}' is not one of its columns")
        object.__setattr__(self, "_by_name", {c.name: c for c in self.columns})
        object.__setattr__(self, "_names", tuple(names))

    @property
    def names(self) -> tuple[str, ...]:
        return self._names

    def __getitem__(self, name: str) -> Column:
        try:
            return self._by_name[name]
        except KeyError:
            raise SchemaError(f"the schema has no column named '{name}'") from None

    def __iter__(self):
        return iter(self.columns)

    def __len__(self) -> int:
        return len(self.columns)

    def to_dict(self) -> dict:
        out: dict = {"columns": [c.to_dict() for c in self.columns]}
        for key in ("name", "target", "task"):
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        if self.prepass is not None:
            out["dp_prepass"] = self.prepass.to_dict()
        return out


def _check_hierarchy(where: str, column: Column) -> None:
    """Levels nest: each level maps every value of the level below to exactly one parent."""
    if not column.type.is_discrete:
        raise SchemaError(f"{where}: only categorical/ordinal columns can declare a 'hierarchy'; remove it or make "
                          f"the column categorical")
    children, names = list(column.categories), set()
    for depth, level in enumerate(column.hierarchy, start=1):
        label = f"{where}, hierarchy level {depth}"
        if not isinstance(level.name, str) or not level.name or level.name in names:
            raise SchemaError(f"{label}: every level needs a unique non-empty 'name'; got {level.name!r}")
        names.add(level.name)
        label = f"{where}, hierarchy level '{level.name}'"
        mapped = [str(child) for child, _ in level.parents]
        if len(set(mapped)) != len(mapped):
            raise SchemaError(f"{label}: a value is given two parents; each value needs exactly one")
        bad = sorted(set(mapped) - {str(c) for c in children})
        if bad:
            raise SchemaError(f"{label}: 'parents' maps {bad[:5]} which are not values of the level below; map "
                              f"exactly the level below's values")
        missing = [c for c in children if str(c) not in set(mapped)]
        if missing:
            raise SchemaError(f"{label}: {len(missing)} value(s) of the level below have no parent (e.g. "
                              f"{missing[:5]}); give every value exactly one parent")
        parents = [parent for _, parent in level.parents]
        if not all(isinstance(p, (str, int)) and not isinstance(p, bool) and str(p) for p in parents):
            raise SchemaError(f"{label}: parent groups must be non-empty strings or integers")
        children = list(dict.fromkeys(str(p) for p in parents))


def _check_bound(where: str, kind: ColumnType, key: str, value) -> None:
    """A public bound must be a finite number (a float64 after conversion)."""
    ok = value is not None and not isinstance(value, bool) and isinstance(value, (int, float))
    try:
        ok = ok and math.isfinite(float(value))
    except OverflowError:  # an int beyond float64
        ok = False
    if not ok:
        raise SchemaError(
            f"{where} is {kind.value} and needs a finite public '{key}' bound; "
            f"got {value!r}. Bounds must come from public knowledge, never from the data."
        )


def _temporal_bound(where: str, kind: ColumnType, key: str, value):
    """A date bound as whole days, a timestamp bound as seconds, since 1970-01-01 UTC, a timestamp_ntz
    bound as seconds since 1970-01-01 00:00 wall clock; from an ISO string (``YYYY-MM-DD`` / ISO 8601:
    a timestamp's naive text is UTC, a timestamp_ntz's must be naive) or a ``date``/``datetime`` (as
    YAML reads them); a number is taken as already converted (the schema file reader refuses numbers)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value
    if kind is ColumnType.DATE:
        try:
            day = value if type(value) is dt.date else dt.date.fromisoformat(value)
            return (day - EPOCH.date()).days
        except (TypeError, ValueError):
            raise SchemaError(f"{where} is date and needs a public '{key}' date written YYYY-MM-DD; got {value!r}. "
                              f"Bounds must come from public knowledge, never from the data.") from None
    wall = kind is ColumnType.TIMESTAMP_NTZ
    try:
        if isinstance(value, str):
            value = dt.datetime.fromisoformat(value.strip())
        if type(value) is dt.date:
            value = dt.datetime(value.year, value.month, value.day)
        if not isinstance(value, dt.datetime):
            raise TypeError(value)
        if not wall:
            return ((value if value.tzinfo else value.replace(tzinfo=dt.timezone.utc)) - EPOCH).total_seconds()
        if value.tzinfo is None:
            return (value - WALL_EPOCH).total_seconds()
    except (TypeError, ValueError, OverflowError):
        example = "2020-01-31T00:00:00, no time zone" if wall else "2020-01-31T00:00:00Z; UTC unless an offset is given"
        raise SchemaError(f"{where} is {kind.value} and needs a public '{key}' timestamp in ISO 8601 (e.g. "
                          f"{example}); got {value!r}. Bounds must come from public knowledge, never from the data.") from None
    raise SchemaError(f"{where} is timestamp_ntz (a wall-clock time without a time zone); write its '{key}' without "
                      f"'Z' or an offset, e.g. 2020-01-31T00:00:00, or declare the column timestamp; got "
                      f"{value.isoformat()!r}")


def temporal_text(kind: ColumnType, value: float) -> str:
    """A date/timestamp bound (days / seconds since the epoch) as its ISO text: timestamps in UTC
    (``...Z``), timestamp_ntz as naive wall-clock text ``YYYY-MM-DDTHH:MM:SS``."""
    if kind is ColumnType.DATE:
        return (EPOCH.date() + dt.timedelta(days=int(value))).isoformat()
    if kind is ColumnType.TIMESTAMP_NTZ:
        return (WALL_EPOCH + dt.timedelta(seconds=float(value))).isoformat()
    text = (EPOCH + dt.timedelta(seconds=float(value))).isoformat()
    return text[:-len("+00:00")] + "Z" if text.endswith("+00:00") else text


def _category_kind(value) -> str | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        return "string"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float) and math.isfinite(value):
        return "float"
    return None
