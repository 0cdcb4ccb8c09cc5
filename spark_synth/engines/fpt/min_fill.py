"""The largest bag of the min-fill tree decomposition of a graph, computed without building it.

FPT asks this of every candidate marginal each round (would adding its scope keep the junction
tree's largest bag within the public cell cap?): thousands of times a round on wide tables, where
networkx's ``treewidth_min_fill_in`` took 1–3 ms a call. The elimination here is networkx's, step
for step — nodes tried in order of degree (stable, by node number), the first with the least
fill-in eliminated (at once when its fill-in is 0), stop when the rest is a clique — so the bags,
and the answer, are the same (``tests/unit/test_fpt_junction_tree.py`` compares them on random
graphs). The bags of that decomposition are each eliminated node with its neighbours then, and the
last clique; a bag merged into a neighbour lies inside it, so merging never changes the largest.
Compiled with numba (a dependency of the package); the plain-Python elimination below is the
reference and the fallback where numba cannot be imported.
"""

from __future__ import annotations

import math
from typing import Sequence

import numpy as np

try:
    import numba
except ImportError:  # pragma: no cover - only where numba cannot be installed
    numba = None


def min_fill_largest_bag(sizes: Sequence[int], scopes: Sequence[Sequence[int]]) -> int:
    """Cells of the largest bag of the min-fill decomposition of the scopes' primal graph over
    variables 0..len(sizes)-1 with domain ``sizes`` (public sizes only)."""
    return PrimalGraph(sizes, scopes).largest_bag()


class PrimalGraph:
    """The scopes' primal graph, built once, asked for the largest min-fill bag with one more scope."""

    def __init__(self, sizes: Sequence[int], scopes: Sequence[Sequence[int]]):
        self.sizes = [int(s) for s in sizes]
        d = len(self.sizes)
        self._sizes = np.asarray(self.sizes, dtype=np.float64)
        self.adjacency = np.zeros((d, d), dtype=np.uint8)
        for scope in dict.fromkeys(tuple(s) for s in scopes):
            for u in scope:
                for v in scope:
                    self.adjacency[u, v] = 1
        np.fill_diagonal(self.adjacency, 0)

    def largest_bag(self, extra: Sequence[int] = ()) -> int:
        """Cells of the largest min-fill bag of the graph with ``extra``'s variables joined pairwise."""
        if not self.sizes:
            return 1
        adjacency = self.adjacency.copy()
        for u in extra:
            for v in extra:
                if u != v:
                    adjacency[u, v] = 1
        members = _largest_bag(adjacency, self._sizes)
        return math.prod(self.sizes[v] for v in np.flatnonzero(members))


def _largest_bag_python(adjacency: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """The min-fill elimination (see the module docstring) on an adjacency matrix, which it
    consumes: the members of the bag with the most cells (first of equals)."""
    d = adjacency.shape[0]
    alive = np.ones(d, dtype=np.bool_)
    degree = adjacency.sum(axis=1).astype(np.int64)
    best_bag = np.zeros(d, dtype=np.bool_)
    best_cells = -1.0
    left = d
    while left > 0:
        order = _by_degree(alive, degree, left)
        if degree[order[0]] == left - 1:
            break  # the rest is a clique: the last bag
        chosen, least = -1, 1 << 62
        for v in order:
            neighbours = np.flatnonzero(adjacency[v])
            fill = 0
            for u in neighbours:
                for w in neighbours:
                    if u != w and adjacency[u, w] == 0:
                        fill += 1
                if fill >= least:
                    break
            if fill < least:
                chosen, least = v, fill
                if fill == 0:
                    break
        neighbours = np.flatnonzero(adjacency[chosen])
        cells = sizes[chosen]
        for u in neighbours:
            cells *= sizes[u]
        if cells > best_cells:
            best_cells = cells
            best_bag[:] = False
            best_bag[chosen] = True
            for u in neighbours:
                best_bag[u] = True
        for u in neighbours:
            for w in neighbours:
                if u != w:
                    adjacency[u, w] = 1
            adjacency[u, chosen] = 0
        adjacency[chosen, :] = 0
        alive[chosen] = False
        left -= 1
        for u in neighbours:
            degree[u] = adjacency[u].sum()
    if left > 0:
        cells = 1.0
        for v in range(d):
            if alive[v]:
                cells *= sizes[v]
        if cells > best_cells:
            best_bag[:] = alive
    return best_bag


def _by_degree_python(alive: np.ndarray, degree: np.ndarray, left: int) -> np.ndarray:
    """The live nodes ordered by degree, ties by node number (a counting sort: O(d) a step)."""
    d = alive.shape[0]
    starts = np.zeros(d + 1, dtype=np.int64)
    for v in range(d):
        if alive[v]:
            starts[degree[v] + 1] += 1
    for k in range(1, d + 1):
        starts[k] += starts[k - 1]
    order = np.empty(left, dtype=np.int64)
    for v in range(d):
        if alive[v]:
            order[starts[degree[v]]] = v
            starts[degree[v]] += 1
    return order


def _compiled(function):
    try:
        return numba.njit(cache=True, nogil=True)(function)
    except RuntimeError:  # no writable cache folder: compile per process
        return numba.njit(nogil=True)(function)


_by_degree = _compiled(_by_degree_python) if numba is not None else _by_degree_python
_largest_bag = _compiled(_largest_bag_python) if numba is not None else _largest_bag_python
