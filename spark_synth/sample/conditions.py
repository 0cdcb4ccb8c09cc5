"""The condition language of conditioned sampling (``--where``), parsed and compiled against a schema.

A condition is a conjunction of predicates on the schema's columns (SQL's syntax; keywords in any case)::

    condition := predicate (AND predicate)*        -- parentheses may group: (a AND b) AND c
    predicate := column (= | == | != | <> | < | <= | > | >=) literal
               | column [NOT] IN (literal, ...)
               | column [NOT] BETWEEN literal AND literal   -- both ends included
               | column IS [NOT] NULL
    column    := name | `any name`                 -- backticks as in Spark SQL
    literal   := number | 'text' | "text" | TRUE | FALSE   -- a quote inside is doubled: 'O''Brien'

A comparison is false on a null, as in SQL. Text compares with text categories (and with date and
timestamp columns, read as Spark casts text: ``visit >= '2020-01-01'``), numbers with numeric columns
and with integer/decimal categories, TRUE/FALSE with booleans. Ranges (<, BETWEEN, ...) need an
ordered column: numbers, dates, timestamps, integer/decimal categories. OR is not supported: sample
each alternative separately.

:func:`parse_condition` checks the text and the columns and compiles it to a :class:`Condition`: the
per-column :class:`~spark_synth.engines.evidence.Evidence` the engines condition on, and the numeric
sets decoding draws inside (:mod:`spark_synth.schema.value_sets`).
"""

from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..engines.evidence import Evidence
from ..errors import UserInputError
from ..schema import Column, Schema
from ..schema.encoding import column_numbers
from ..schema.value_sets import Interval, NumberSet, bin_weights


class ConditionError(UserInputError):
    """A ``--where`` condition that cannot be parsed, names no column of the schema, or that the model
    gives (almost) no probability; the message names the part at fault and how to fix it."""


_TOKEN = re.compile(r"""\s*(?:
    (?P<number>[-+]?(?:\d[\d_]*(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?)
  | (?P<text>'(?:[^']|'')*'|"(?:[^"]|"")*")
  | (?P<quoted>`(?:[^`]|``)+`)
  | (?P<word>[A-Za-z_][A-Za-z0-9_.]*)
  | (?P<op>==|!=|<>|<=|>=|=|<|>)
  | (?P<punct>[(),])
)""", re.VERBOSE)

_KEYWORDS = {"AND", "OR", "NOT", "IN", "BETWEEN", "IS", "NULL", "TRUE", "FALSE"}


@dataclass(frozen=True)
class _Token:
    kind: str  # number, text, name, keyword, op, punct, end
    value: object
    at: int
    end: int


def _tokens(text: str) -> list[_Token]:
    out, position = [], 0
    while position < len(text):
        match = _TOKEN.match(text, position)
        if match is None or match.end() == position:
            if text[position:].strip() == "":
                break
            at = position + len(text[position:]) - len(text[position:].lstrip())
            raise ConditionError(f"--where: cannot read {text[at:at + 12]!r} at character {at + 1} of {text!r}")
        kind = match.lastgroup
        raw = match.group(kind)
        at = match.start(kind)
        if kind == "number":
            value = float(raw.replace("_", ""))
        elif kind == "text":
            value = raw[1:-1].replace(raw[0] * 2, raw[0])
        elif kind == "quoted":
            kind, value = "name", raw[1:-1].replace("``", "`")
        elif kind == "word":
            kind, value = ("keyword", raw.upper()) if raw.upper() in _KEYWORDS else ("name", raw)
        else:
            value = raw
        out.append(_Token(kind, value, at, match.end()))
        position = match.end()
    out.append(_Token("end", None, len(text), len(text)))
    return out


@dataclass(frozen=True)
class Predicate:
    """One parsed predicate: ``column op values`` (op: =, !=, <, <=, >, >=, in, not in, between,
    not between, is null, is not null)."""

    column: str
    op: str
    values: tuple = ()
    text: str = ""


class _Parser:
    """Recursive descent over the tokens of :data:`_TOKEN`."""

    def __init__(self, text: str):
        self.text, self.tokens, self.i = text, _tokens(text), 0

    def peek(self) -> _Token:
        return self.tokens[self.i]

    def take(self) -> _Token:
        self.i += 1
        return self.tokens[self.i - 1]

    def expect(self, kind: str, value=None, what: str = "") -> _Token:
        token = self.take()
        if token.kind != kind or (value is not None and token.value != value):
            self.fail(token, f"expected {what or value or kind}")
        return token

    def fail(self, token: _Token, message: str):
        found = "the end" if token.kind == "end" else repr(self.text[token.at:token.at + 15])
        raise ConditionError(f"--where: {message} at character {token.at + 1}, found {found}, in {self.text!r}")

    def condition(self) -> list[Predicate]:
        predicates = self.conjunction()
        token = self.peek()
        if token.kind == "keyword" and token.value == "OR":
            self.fail(token, "OR is not supported (a condition is a conjunction: AND); sample each alternative "
                             "separately and union them")
        if token.kind != "end":
            self.fail(token, "expected AND or the end of the condition")
        return predicates

    def conjunction(self) -> list[Predicate]:
        predicates = self.operand()
        while self.peek().kind == "keyword" and self.peek().value == "AND":
            self.take()
            predicates += self.operand()
        return predicates

    def operand(self) -> list[Predicate]:
        if self.peek().kind == "punct" and self.peek().value == "(":
            self.take()
            inner = self.conjunction()
            self.expect("punct", ")", "')'")
            return inner
        return [self.predicate()]

    def predicate(self) -> Predicate:
        start = self.peek()
        if start.kind != "name":
            self.fail(start, "expected a column name")
        column = self.take().value
        token = self.take()
        negated = token.kind == "keyword" and token.value == "NOT"
        if negated:
            token = self.take()
        if token.kind == "op" and not negated:
            op = {"==": "=", "<>": "!="}.get(token.value, token.value)
            values = (self.literal(),)
        elif token.kind == "keyword" and token.value == "IN":
            self.expect("punct", "(", "'(' after IN")
            values = [self.literal()]
            while self.peek().kind == "punct" and self.peek().value == ",":
                self.take()
                values.append(self.literal())
            self.expect("punct", ")", "')' or ',' in the IN list")
            op, values = ("not in" if negated else "in"), tuple(values)
        elif token.kind == "keyword" and token.value == "BETWEEN":
            low = self.literal()
            self.expect("keyword", "AND", "AND in BETWEEN ... AND ...")
            op, values = ("not between" if negated else "between"), (low, self.literal())
        elif token.kind == "keyword" and token.value == "IS" and not negated:
            negated = self.peek().kind == "keyword" and self.peek().value == "NOT"
            if negated:
                self.take()
            self.expect("keyword", "NULL", "NULL after IS")
            op, values = ("is not null" if negated else "is null"), ()
        else:
            self.fail(token, "expected a comparison (=, !=, <, <=, >, >=), IN, BETWEEN or IS NULL")
        return Predicate(column, op, values, self.text[start.at:self.tokens[self.i - 1].end].strip())

    def literal(self):
        token = self.take()
        if token.kind in ("number", "text"):
            return token.value
        if token.kind == "keyword" and token.value in ("TRUE", "FALSE"):
            return token.value == "TRUE"
        if token.kind == "keyword" and token.value == "NULL":
            self.fail(token, "a comparison with NULL is never true; write IS NULL or IS NOT NULL")
        self.fail(token, "expected a value: a number, 'text', TRUE or FALSE")


def parse_predicates(text: str) -> list[Predicate]:
    """The predicates of a condition (syntax only; see the module docstring)."""
    if not isinstance(text, str) or not text.strip():
        raise ConditionError(f"--where: a condition is a non-empty text such as \"age >= 65 AND sex = 'Female'\"; got {text!r}")
    return _Parser(text).condition()


@dataclass
class Condition:
    """A compiled condition: per constrained column (by position) the allowed codes' weights, and
    the numeric sets its values must lie in."""

    text: str
    weights: dict[int, np.ndarray] = field(default_factory=dict)
    numbers: dict[int, NumberSet] = field(default_factory=dict)

    def evidence(self) -> Evidence:
        return Evidence(self.weights)


def parse_condition(text: str, schema: Schema) -> Condition:
    """``text`` parsed and compiled against ``schema`` (errors name the predicate and the fix)."""
    return _compiled(text, parse_predicates(text), schema)


def _compiled(text: str, predicates, schema: Schema) -> Condition:
    discrete: dict[int, np.ndarray] = {}
    numeric: dict[int, tuple[NumberSet, bool]] = {}
    for predicate in predicates:
        j = _column_index(predicate.column, schema)
        column = schema.columns[j]
        if column.type.is_discrete:
            allowed = _discrete_allowed(predicate, column)
            discrete[j] = allowed if j not in discrete else discrete[j] & allowed
        else:
            numbers, null = _numeric_allowed(predicate, column)
            if j in numeric:
                numbers, null = numeric[j][0].intersect(numbers), numeric[j][1] and null
            numeric[j] = (numbers, null)
    weights = {j: allowed.astype(np.float64) for j, allowed in discrete.items()}
    for j, (numbers, null) in numeric.items():
        column = schema.columns[j]
        w = bin_weights(column, numbers)
        weights[j] = np.append(w, 1.0 if null else 0.0) if column.nullable else w
    return Condition(text, weights, {j: numbers for j, (numbers, _) in numeric.items()})


def _column_index(name: str, schema: Schema) -> int:
    names = list(schema.names)
    if name in names:
        return names.index(name)
    close = difflib.get_close_matches(name, names, n=1, cutoff=0.6) or \
        [n for n in names if n.lower() == name.lower()]
    hint = f" (did you mean `{close[0]}`?)" if close else f"; its columns are {', '.join(names)}"
    raise ConditionError(f"--where: the schema has no column {name!r}{hint}")


def _discrete_allowed(predicate: Predicate, column: Column) -> np.ndarray:
    """Per code of a categorical column: whether the predicate holds (the null code: IS NULL only)."""
    allowed = np.zeros(column.size, dtype=bool)
    if predicate.op in ("is null", "is not null"):
        if predicate.op == "is null" and column.nullable:
            allowed[column.null_code] = True
        if predicate.op == "is not null":
            allowed[:column.n_values] = True
        return allowed
    kind = column.category_kind
    if predicate.op in ("=", "!=", "in", "not in"):
        indices = [_category_index(value, column, predicate) for value in predicate.values]
        allowed[indices] = True
        if predicate.op in ("!=", "not in"):
            allowed[:column.n_values] = ~allowed[:column.n_values]
        return allowed
    if kind not in ("integer", "float"):
        raise ConditionError(f"--where: {predicate.text!r}: column {column.name!r} holds {kind} categories, which "
                             "have no order; use = or IN")
    values = np.asarray(column.categories, dtype=np.float64)
    numbers = [_number(value, column, predicate) for value in predicate.values]
    allowed[:column.n_values] = _range(predicate.op, numbers).contains(values)
    return allowed


def _category_index(value, column: Column, predicate: Predicate) -> int:
    kind, categories = column.category_kind, list(column.categories)
    if kind == "boolean":
        if not isinstance(value, bool):
            raise ConditionError(f"--where: {predicate.text!r}: column {column.name!r} is boolean; compare it with TRUE or FALSE")
        return int(value)
    if kind == "string":
        if not isinstance(value, str):
            raise ConditionError(f"--where: {predicate.text!r}: column {column.name!r} holds text; write the value in "
                                 f"quotes, e.g. {column.name} = '{categories[0]}'")
        if value in categories:
            return categories.index(value)
        close = difflib.get_close_matches(value, [str(c) for c in categories], n=1, cutoff=0.6)
        hint = f" (did you mean '{close[0]}'?)" if close else f"; they are {_listed(categories)}"
        raise ConditionError(f"--where: {predicate.text!r}: {value!r} is not a category of {column.name!r}{hint}")
    number = _number(value, column, predicate)
    matches = [i for i, c in enumerate(categories) if float(c) == number]
    if not matches:
        raise ConditionError(f"--where: {predicate.text!r}: {value!r} is not a category of {column.name!r}; "
                             f"they are {_listed(categories)}")
    return matches[0]


def _listed(categories) -> str:
    shown = ", ".join(repr(c) for c in categories[:12])
    return shown + (f" and {len(categories) - 12} more" if len(categories) > 12 else "")


def _numeric_allowed(predicate: Predicate, column: Column) -> tuple[NumberSet, bool]:
    """(the numbers a numeric column's value may take, whether null is allowed) under the predicate."""
    if predicate.op == "is null":
        return NumberSet(), True
    if predicate.op == "is not null":
        return NumberSet.everything(), False
    numbers = [_number(value, column, predicate) for value in predicate.values]
    if predicate.op in ("in", "not in"):
        points = NumberSet.points(numbers)
        return (points if predicate.op == "in" else points.complement()), False
    return _range(predicate.op, numbers), False


def _range(op: str, numbers: list[float]) -> NumberSet:
    value = numbers[0]
    sets = {
        "=": lambda: NumberSet.point(value),
        "!=": lambda: NumberSet.point(value).complement(),
        "<": lambda: NumberSet([Interval(-math.inf, value, False, False)]),
        "<=": lambda: NumberSet([Interval(-math.inf, value, False, True)]),
        ">": lambda: NumberSet([Interval(value, math.inf, False, False)]),
        ">=": lambda: NumberSet([Interval(value, math.inf, True, False)]),
        "in": lambda: NumberSet.points(numbers),
        "not in": lambda: NumberSet.points(numbers).complement(),
        "between": lambda: NumberSet([Interval(numbers[0], numbers[1])]),
        "not between": lambda: NumberSet([Interval(numbers[0], numbers[1])]).complement(),
    }
    return sets[op]()


def _number(value, column: Column, predicate: Predicate) -> float:
    """A literal as the column's numbers: dates/timestamps from text as the fit reads them."""
    if column.type.is_temporal:
        if not isinstance(value, str):
            raise ConditionError(f"--where: {predicate.text!r}: column {column.name!r} is a {column.type.value}; write "
                                 f"the value as text, e.g. '2020-01-31'")
        number = float(column_numbers(pd.Series([value], dtype=object), column)[0])
        if math.isnan(number):
            raise ConditionError(f"--where: {predicate.text!r}: {value!r} is not a {column.type.value}")
        return number
    if isinstance(value, bool) or not isinstance(value, float):
        raise ConditionError(f"--where: {predicate.text!r}: column {column.name!r} holds numbers; compare it with a "
                             "number (no quotes)")
    return value


def as_condition(conditions, schema: Schema) -> Condition | None:
    """The API's ``conditions``: None, a condition text (the ``--where`` language), a :class:`Condition`,
    or a mapping column → value (equality) or list of values (IN), e.g. ``{"defaulted": "Yes"}``."""
    if conditions is None or isinstance(conditions, Condition):
        return conditions
    if isinstance(conditions, str):
        return parse_condition(conditions, schema)
    if isinstance(conditions, dict) and conditions:
        predicates, parts = [], []
        for name, value in conditions.items():
            values = tuple(value) if isinstance(value, (list, tuple, set)) else (value,)
            values = tuple(float(v) if isinstance(v, (int, np.integer)) and not isinstance(v, bool) else v for v in values)
            op = "in" if isinstance(value, (list, tuple, set)) else "="
            text = f"{name} {op.upper()} {values!r}" if op == "in" else f"{name} = {value!r}"
            predicates.append(Predicate(str(name), op, values, text))
            parts.append(text)
        return _compiled(" AND ".join(parts), predicates, schema)
    raise ConditionError("conditions must be a condition text (e.g. \"age >= 65 AND sex = 'Female'\") or a non-empty "
                         f"mapping of column to value or list of values; got {conditions!r}")
