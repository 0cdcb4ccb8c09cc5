"""What a fitted model writes, column by column, known before any row is written: the share of nulls
in each nullable column and of the ``clip`` substitute in each non-nullable one.

Under ``--out-of-domain clip`` a value the schema cannot read (a yes/no string in a column declared
``integer``, mis-encoded text, an unknown category) is measured as a null — or, in a non-nullable
column, as its substitute (first category / lower bound). So a column declared with the wrong type
comes out (almost) all null, or all one value. The shares here are read off a fixed-seed sample of
:data:`CHECK_ROWS` rows drawn from the model on the driver: post-processing of the DP model, so they
cost no budget and are covered by the guarantee (the same model always gives the same shares).

:func:`check` turns them into a refusal (a nullable column at least :data:`EMPTY_SHARE` null: its
output would be empty) and warnings (a nullable column at least :data:`MOSTLY_NULL_SHARE` null, a
non-nullable one at least :data:`EMPTY_SHARE` its substitute).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..engines import FittedModel
from ..errors import DataValidationError
from ..schema import Column, Schema

CHECK_ROWS = 10_000
CHECK_SEED = 0  # public and fixed
EMPTY_SHARE = 0.99
MOSTLY_NULL_SHARE = 0.5


@dataclass(frozen=True)
class ColumnShares:
    """Per column name: the model's null share (nullable columns) and substitute share (the others)."""

    null: dict[str, float]
    substitute: dict[str, float]

    def to_dict(self) -> dict:
        return {"null_share": dict(self.null), "substitute_share": dict(self.substitute)}


def column_shares(model: FittedModel, schema: Schema) -> ColumnShares:
    """The shares of a fixed-seed sample of the model (see the module docstring)."""
    codes = model.sample_codes(CHECK_ROWS, np.random.default_rng(CHECK_SEED))
    null, substitute = {}, {}
    for j, column in enumerate(schema):
        if column.nullable:
            null[column.name] = round(float(np.mean(codes[:, j] == column.null_code)), 4)
        else:
            substitute[column.name] = round(float(np.mean(codes[:, j] == 0)), 4)
    return ColumnShares(null, substitute)


def check(shares: ColumnShares, schema: Schema) -> list[str]:
    """Refuse (:class:`DataValidationError`, naming every such column) when a nullable column would be
    (almost) empty; return the warnings otherwise."""
    empty = [name for name, share in shares.null.items() if share >= EMPTY_SHARE]
    if empty:
        columns = "; ".join(f"'{name}' {shares.null[name]:.0%} null ({_declared(schema[name])})" for name in empty)
        raise DataValidationError(
            f"the synthetic output would be (almost) empty in column(s) {columns}: the fitted model's DP estimate of "
            f"the source's nulls and of values the schema cannot read, which --out-of-domain clip turns into nulls. "
            f"Check each column's declared type, categories and encoding in the schema (run with --out-of-domain error "
            f"to have such values refused before any budget is spent); drop a column that is really empty. Nothing "
            f"was written; a fit made for this output stays charged to its table's ledger")
    warnings = [f"column '{name}': {share:.0%} of the synthetic values are null (the fitted model's DP estimate of "
                f"the source's nulls and of values the schema could not read as {_declared(schema[name])}): if the "
                f"source column is not mostly null, check its type and categories in the schema"
                for name, share in shares.null.items() if share >= MOSTLY_NULL_SHARE]
    warnings += [f"column '{name}': {share:.0%} of the synthetic values are {_substitute(schema[name])}, where "
                 f"--out-of-domain clip puts nulls and values the schema could not read as {_declared(schema[name])}: "
                 f"if the source column is not (almost) constant, check its type and categories in the schema"
                 for name, share in shares.substitute.items() if share >= EMPTY_SHARE]
    return warnings


def _declared(column: Column) -> str:
    if column.type.is_discrete:
        return f"{column.type.value} with {column.n_values} categories"
    return f"{column.type.value} in [{column.min:g}, {column.max:g}]"


def _substitute(column: Column) -> str:
    if column.type.is_discrete:
        return f"its first category {column.categories[0]!r}"
    return f"in its lowest range (from its lower bound {column.min:g})"
