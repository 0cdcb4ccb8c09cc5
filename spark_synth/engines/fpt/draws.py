"""Exact sampling from an FPT model with NumPy only: what Spark's Python workers run.

The model is p(x) ∝ exp(Σ_b θ_b(x_b)) with one log-potential table θ_b per bag of a rooted junction
tree (:class:`TreeStructure`: public domain sizes, bags root first, each bag's parent). Calibration
is one upward pass in log space: each bag's table plus the messages of its children, u_b (a message
is a log-sum-exp over the child's variables outside its separator). u_b sums up the bag's whole
subtree, which given the separator is independent of everything above it, so

    p(bag b \\ separator | separator) ∝ exp(u_b)   (the root's: p(root bag) ∝ exp(u_root)),

normalised row by row after subtracting the row's maximum: log-potentials spanning thousands (the
fit's −10⁴ for codes without mass) give exact zeros, never NaN. Rows are drawn root bag first, each
bag's other variables from that conditional at the row's separator value, by one search in the
conditionals' cumulative sums laid end to end (as ``graphical._inverse_cdf``), with the uniforms
stratified among rows that share the separator's value (:mod:`..stratified`; the root bag is one
group), so every bag's counts are its expected counts, rounded.

This module imports neither torch nor :mod:`.graphical` (which does): sampling is post-processing
and must not pay torch's start-up on every worker. :meth:`TreeStructure.min_fill` is the one
construction of the rooted min-fill decomposition (networkx, imported only there); the fit's
``graphical.JunctionTree`` takes its bags from it. The module
is not called ``sampler``: engine code may import no module whose name holds "sample"
(``tests/unit/test_architecture.py``, which keeps engines away from ``spark_synth.sample``).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Mapping, Sequence

import numpy as np

from ..stratified import stratified_uniforms

Scope = tuple[int, ...]


def checked_scope(scope: Iterable[int], d: int) -> Scope:
    """``scope`` as a strictly increasing tuple of variables in 0..d-1 (ValueError otherwise)."""
    scope = tuple(int(v) for v in scope)
    if any(a >= b for a, b in zip(scope, scope[1:])) or any(not 0 <= v < d for v in scope):
        raise ValueError(f"scope {scope} is not a strictly increasing tuple of variables in 0..{d - 1}")
    return scope


class TreeStructure:
    """A rooted junction tree's public structure: domain ``sizes``, sorted ``bags`` listed root first
    and each bag's ``parents`` index (−1 for the root, else an earlier bag). Checked: every variable
    is in a bag, and the bags holding it form one subtree."""

    def __init__(self, sizes: Sequence[int], bags: Sequence[Sequence[int]], parents: Sequence[int]):
        self.sizes = tuple(int(s) for s in sizes)
        self.bags = tuple(checked_scope(bag, len(self.sizes)) for bag in bags)
        self.parents = tuple(int(p) for p in parents)
        if not self.bags or len(self.parents) != len(self.bags) or self.parents[0] != -1 \
                or any(not 0 <= p < i for i, p in enumerate(self.parents) if i):
            raise ValueError("parents must list -1 for the root bag, then an earlier bag for every other bag")
        self.separators = tuple(tuple(v for v in bag if p >= 0 and v in self.bags[p])
                                for bag, p in zip(self.bags, self.parents))
        tops: dict[int, list[int]] = {}  # bags holding v whose parent does not: exactly one per variable
        for i, (bag, separator) in enumerate(zip(self.bags, self.separators)):
            for v in bag:
                if v not in separator:
                    tops.setdefault(v, []).append(i)
        if len(tops) != len(self.sizes) or any(len(found) != 1 for found in tops.values()):
            raise ValueError("every variable must be in a bag, and the bags holding it must be connected")
        #: each variable's top bag (the one nearest the root that holds it)
        self.tops: dict[int, int] = {v: found[0] for v, found in tops.items()}

    @classmethod
    def min_fill(cls, sizes: Sequence[int], scopes: Iterable[Sequence[int]]) -> TreeStructure:
        """The min-fill decomposition of the scopes' primal graph rooted as ``graphical.JunctionTree``
        roots it (no bag inside a neighbour; root the largest bag; breadth first, smaller bags first)."""
        import networkx as nx
        from networkx.algorithms.approximation import treewidth_min_fill_in

        sizes = tuple(int(s) for s in sizes)
        if not sizes:
            raise ValueError("a model needs at least one variable")
        graph = nx.Graph()
        graph.add_nodes_from(range(len(sizes)))
        for scope in scopes:
            graph.add_edges_from(itertools.combinations(checked_scope(scope, len(sizes)), 2))
        tree = treewidth_min_fill_in(graph)[1]
        while (edge := next(((a, b) for a, b in tree.edges if a <= b or b <= a), None)) is not None:
            small, large = sorted(edge, key=len)
            tree = nx.contracted_nodes(tree, large, small, self_loops=False)
        root = max(tree, key=lambda bag: (math.prod(sizes[v] for v in bag), sorted(bag)))
        order, parents, index = [root], [-1], {root: 0}
        for above, below in nx.bfs_edges(tree, root, sort_neighbors=lambda bags: sorted(bags, key=sorted)):
            index[below] = len(order)
            order.append(below)
            parents.append(index[above])
        return cls(sizes, [sorted(bag) for bag in order], parents)

    @property
    def width(self) -> int:
        """The decomposition's width: largest bag size minus one."""
        return max(map(len, self.bags)) - 1

    def shape(self, variables: Iterable[int]) -> tuple[int, ...]:
        """Domain sizes of ``variables``."""
        return tuple(self.sizes[v] for v in variables)

    def bag_containing(self, scope: Iterable[int]) -> int | None:
        """Index of the first bag (root first) that contains ``scope``, or None."""
        scope = set(scope)
        return next((i for i, bag in enumerate(self.bags) if scope <= set(bag)), None)


def _logsumexp(table: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """log Σ exp over ``axes``, shifted by the maximum (finite tables: no overflow, no NaN)."""
    top = table.max(axis=axes, keepdims=True)
    return (top + np.log(np.exp(table - top).sum(axis=axes, keepdims=True))).squeeze(axis=axes)


class TreeSampler:
    """p(x) ∝ exp(Σ_b θ_b(x_b)) on a :class:`TreeStructure`, calibrated at construction (``log_partition``,
    each bag's conditional given its separator), sampled exactly with stratified uniforms.
    ``bag_tables[b]`` is bag b's log-potential table, axes = the bag's variables."""

    def __init__(self, tree: TreeStructure, bag_tables: Sequence[np.ndarray]):
        self.tree = tree
        totals = [np.array(table, dtype=np.float64) for table in bag_tables]  # copies: summed into below
        if len(totals) != len(tree.bags):
            raise ValueError(f"{len(tree.bags)} bag tables expected, not {len(totals)}")
        for bag, table in zip(tree.bags, totals):
            if table.shape != tree.shape(bag) or not np.isfinite(table).all():
                raise ValueError(f"the table of bag {bag} must be finite with shape {tree.shape(bag)}")
        self._rest: list[Scope] = []  # each bag's variables outside its separator
        for i in reversed(range(len(totals))):  # upward pass: children come after their parents
            bag, separator, parent = tree.bags[i], tree.separators[i], tree.parents[i]
            outside = tuple(k for k, v in enumerate(bag) if v not in separator)
            if parent >= 0:
                message = _logsumexp(totals[i], outside)  # axes: the separator's variables, in order
                totals[parent] = totals[parent] + message.reshape([tree.sizes[v] if v in separator else 1
                                                                   for v in tree.bags[parent]])
        self.log_partition = float(_logsumexp(totals[0], tuple(range(totals[0].ndim))))
        self._conditionals, self._cumulative, self._last = [], [], []
        for bag, separator, total in zip(tree.bags, tree.separators, totals):
            rest = tuple(v for v in bag if v not in separator)
            matrix = total.transpose([bag.index(v) for v in separator + rest]).reshape(math.prod(tree.shape(separator)), -1)
            weights = np.exp(matrix - matrix.max(axis=1, keepdims=True))  # each row's largest cell is 1
            cumulative = np.cumsum(weights, axis=1)
            cumulative /= cumulative[:, -1:]
            self._rest.append(rest)
            self._conditionals.append(weights / weights.sum(axis=1, keepdims=True))  # rows: separator cells
            # row s of the search array spans [s, s + 1]; a draw never goes past its row's last cell with mass
            self._cumulative.append((cumulative + np.arange(len(matrix), dtype=np.float64)[:, None]).reshape(-1))
            self._last.append(weights.shape[1] - 1 - np.argmax(weights[:, ::-1] > 0, axis=1))
        self._beliefs: list[np.ndarray | None] = [None] * len(tree.bags)

    @classmethod
    def from_potentials(cls, tree: TreeStructure, potentials: Mapping[Sequence[int], np.ndarray]) -> TreeSampler:
        """The model of log-potential tables over sorted scopes, each added to the first bag (root first)
        that contains it; bags without one are zero."""
        tables = [np.zeros(tree.shape(bag)) for bag in tree.bags]
        for scope, table in potentials.items():
            scope = checked_scope(scope, len(tree.sizes))
            if (i := tree.bag_containing(scope)) is None:
                raise ValueError(f"scope {scope} is not covered by the junction tree")
            table = np.asarray(table, dtype=np.float64)
            if table.shape != tree.shape(scope):
                raise ValueError(f"table of scope {scope} must have shape {tree.shape(scope)}, not {table.shape}")
            tables[i] += table.reshape([tree.sizes[v] if v in scope else 1 for v in tree.bags[i]])
        return cls(tree, tables)

    def bag_marginal(self, i: int) -> np.ndarray:
        """Bag i's probability table, axes = the bag: its parent's marginal over the separator times
        the bag's conditional, root first (in probability space: every factor is in [0, 1])."""
        if self._beliefs[i] is None:
            tree = self.tree
            bag, separator, parent, rest = tree.bags[i], tree.separators[i], tree.parents[i], self._rest[i]
            joint = self._conditionals[i]
            if parent >= 0:
                above = self.bag_marginal(parent)
                summed = tuple(k for k, v in enumerate(tree.bags[parent]) if v not in separator)
                joint = joint * (above.sum(axis=summed) if summed else above).reshape(-1, 1)
            order = separator + rest
            self._beliefs[i] = joint.reshape(tree.shape(order)).transpose([order.index(v) for v in bag])
        return self._beliefs[i]

    def sample(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """(n, d) int64 exact draws: the root bag from its marginal, then (root first) each bag's other
        variables from their conditional given the separator's values, with uniforms stratified among
        the rows that share a separator value (the root bag: one group)."""
        tree = self.tree
        columns = np.zeros((len(tree.sizes), n), dtype=np.int64)
        for separator, rest, cumulative, last in zip(tree.separators, self._rest, self._cumulative, self._last):
            rows = np.zeros(n, dtype=np.int64)  # the separator's flat index (row-major)
            for v in separator:
                rows = rows * tree.sizes[v] + columns[v]
            uniforms = stratified_uniforms(n, rng, rows if separator else None)
            width = len(cumulative) // len(last)
            cells = np.searchsorted(cumulative, rows + uniforms, side="right") - rows * width
            cells = np.minimum(cells, last[rows])
            for v in reversed(rest):  # the flat cell of the bag's other variables, unravelled
                cells, columns[v] = np.divmod(cells, tree.sizes[v])
        return np.ascontiguousarray(columns.T)
