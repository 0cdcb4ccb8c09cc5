"""Labelled tables: float tensors whose axes follow a sorted tuple of variables — aligning, reducing,
multiplying and splitting them, flat indices of their cells, and drawing a cell from a row."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence

import torch

Scope = tuple[int, ...]
#: Floor of a separator marginal before its log in the downward pass (far below any probability that matters).
_TINY = 1e-300
Reducer = Callable[[torch.Tensor, tuple[int, ...]], torch.Tensor]


def _tiny(table: torch.Tensor) -> float:
    """The floor for ``table``'s dtype: :data:`_TINY` in float64, the smallest normal number in float32."""
    return _TINY if table.dtype == torch.float64 else torch.finfo(table.dtype).tiny


def _logsumexp(table: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    return torch.logsumexp(table, dim=dims)


def _sum(table: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    return table.sum(dim=dims)


def _amax(table: torch.Tensor, dims: tuple[int, ...]) -> torch.Tensor:
    return torch.amax(table, dim=dims)


def _align(table: torch.Tensor, variables: Scope, target: Scope) -> torch.Tensor:
    """View ``table`` (axes ``variables``) with singleton axes so that it broadcasts over ``target``."""
    position = {v: k for k, v in enumerate(target)}
    shape = [1] * len(target)
    for v, size in zip(variables, table.shape):
        shape[position[v]] = size
    return table.reshape(shape)


def _reduce(table: torch.Tensor, variables: Scope, keep: set[int], reducer: Reducer) -> tuple[Scope, torch.Tensor]:
    """Reduce ``table`` over its variables outside ``keep``: (kept variables, reduced table)."""
    dims = tuple(k for k, v in enumerate(variables) if v not in keep)
    return tuple(v for v in variables if v in keep), (reducer(table, dims) if dims else table)


def _product(factors: list[tuple[Scope, torch.Tensor]]) -> tuple[Scope, torch.Tensor]:
    """Product of labelled probability tables, over the union of their variables."""
    union = tuple(sorted(set().union(*(variables for variables, _ in factors))))
    table = _align(factors[0][1], factors[0][0], union)
    for variables, other in factors[1:]:
        table = table * _align(other, variables, union)
    return union, table


def _split(table: torch.Tensor, bag: Scope, separator: Scope) -> tuple[torch.Tensor, Scope]:
    """A bag table as a (separator cells, other cells) matrix, and the other variables."""
    rest = tuple(v for v in bag if v not in separator)
    order = [bag.index(v) for v in separator + rest]
    rows = math.prod(table.shape[bag.index(v)] for v in separator)
    return table.permute(order).reshape(rows, -1), rest


def _flat_index(values: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """Row-major flat index of the (n, k) configurations ``values`` in a table of ``shape``."""
    index = torch.zeros(values.shape[0], dtype=torch.int64, device=values.device)
    for column, size in zip(values.T, shape):
        index = index * size + column
    return index


def _configurations(flat: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """Inverse of :func:`_flat_index`: (n, k) configurations of flat indices ``flat`` (by division:
    ``torch.unravel_index`` took ~20 ms a call on CPU, whatever the size, and sampling calls it per bag)."""
    columns = []
    for size in reversed(tuple(shape)):
        columns.append(flat % size)
        flat = flat // size
    return torch.stack(columns[::-1], dim=-1) if columns else flat.new_zeros((flat.shape[0], 0))


def _inverse_cdf(probabilities: torch.Tensor, rows: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """Column drawn from row ``rows[j]`` of the (S, K) probability matrix with uniform ``uniforms[j]``:
    one search in the rows' cumulative sums laid end to end (row s spans [s, s + 1])."""
    cumulative = probabilities.cumsum(dim=1)
    cumulative = cumulative / cumulative[:, -1:]
    offsets = torch.arange(len(probabilities), dtype=torch.float64, device=probabilities.device)[:, None]
    flat = torch.searchsorted((cumulative + offsets).reshape(-1), rows + uniforms, right=True)
    return torch.clamp(flat - rows * probabilities.shape[1], 0, probabilities.shape[1] - 1)
