"""The junction tree: the rooted min-fill tree decomposition of the scopes' primal graph, where each
scope sits and what a marginal over a scope costs, and the bags that cover a scope."""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Sequence

from .draws import TreeStructure, checked_scope
from .labelled_tables import Scope
from .min_fill import PrimalGraph, min_fill_largest_bag


class JunctionTree:
    """Rooted junction tree of the scopes' min-fill decomposition; bags listed root first (BFS)."""

    def __init__(self, sizes: Sequence[int], scopes: Iterable[Sequence[int]]):
        if not sizes:
            raise ValueError("a model needs at least one variable")
        self.sizes = tuple(int(s) for s in sizes)
        self.scopes = tuple(checked_scope(scope, len(self.sizes)) for scope in scopes)
        structure = TreeStructure.min_fill(self.sizes, self.scopes)  # the sampler's tree: one construction
        self.bags: tuple[Scope, ...] = structure.bags
        self.parent: list[int] = list(structure.parents)
        self.separators: tuple[Scope, ...] = structure.separators
        self.tops = structure.tops  # each variable's top bag
        self._bag_sets = [set(bag) for bag in self.bags]
        # each bag's message axes, fixed by the tree: the bag's axes outside its separator, the
        # separator viewed along the bag's and the parent's axes, and the parent's axes outside it
        self.outside = [tuple(k for k, v in enumerate(bag) if v not in sep) for bag, sep in zip(self.bags, self.separators)]
        self.separator_in_bag = [self._viewed(sep, bag) for bag, sep in zip(self.bags, self.separators)]
        self.separator_in_parent = [self._viewed(sep, self.bags[p]) if p >= 0 else None
                                    for sep, p in zip(self.separators, self.parent)]
        self.parent_outside = [tuple(k for k, v in enumerate(self.bags[p]) if v not in sep) if p >= 0 else None
                               for sep, p in zip(self.separators, self.parent)]
        self._edges = {frozenset(pair) for scope in self.scopes for pair in itertools.combinations(scope, 2)}
        self._homes: dict[frozenset, int | None] = {}  # bag_containing's answers
        self._placements: dict[Scope, tuple] = {}  # place()'s answers
        self._sums: dict[Scope, tuple[int | None, tuple[int, ...]]] = {}  # marginal()'s plans
        self._graph: PrimalGraph | None = None  # the scopes' graph, for largest_bag_if_added
        self._neighbours: list[list[int]] | None = None  # each bag's neighbours, when first needed
        self._subtrees: dict[frozenset, frozenset] = {}  # _covering_subtree's answers
        self._depths = [0] * len(self.bags)  # each bag's distance from the root (_pair_path)
        for i, p in enumerate(self.parent):
            if p >= 0:
                self._depths[i] = self._depths[p] + 1
        self.width = max(map(len, self.bags)) - 1
        self.largest_bag_cells = max(map(self.cells, self.bags))
        assert all(self.bag_containing(scope) is not None for scope in self.scopes)

    def _viewed(self, variables: Scope, bag: Scope) -> tuple[int, ...]:
        """The shape of a table over ``variables`` (a sorted subset of ``bag``) viewed along ``bag``'s axes."""
        return tuple(self.sizes[v] if v in variables else 1 for v in bag)

    def shape(self, variables: Iterable[int]) -> tuple[int, ...]:
        """Domain sizes of ``variables``."""
        return tuple(self.sizes[v] for v in variables)

    def cells(self, variables: Iterable[int]) -> int:
        """Number of cells of a table over ``variables``."""
        return math.prod(self.shape(variables))

    def bag_containing(self, scope: Iterable[int]) -> int | None:
        """Index of the first bag (root first) that contains ``scope``, or None."""
        scope = frozenset(scope)
        if scope not in self._homes:
            self._homes[scope] = next((i for i, bag in enumerate(self._bag_sets) if scope <= bag), None)
        return self._homes[scope]

    def place(self, scope: Sequence[int]) -> tuple[int, tuple[int, ...], tuple[int, ...]]:
        """The bag a table over the sorted ``scope`` is added to, the table's shape, and that shape
        viewed along the bag's axes (checked once per scope, then remembered)."""
        if (placed := self._placements.get(scope)) is None:
            checked = checked_scope(scope, len(self.sizes))
            if (i := self.bag_containing(checked)) is None:
                raise ValueError(f"scope {checked} is not covered by the junction tree")
            placed = (i, self.shape(checked), tuple(self.sizes[v] if v in checked else 1 for v in self.bags[i]))
            self._placements[scope] = placed
        return placed

    def summed_out(self, scope: Sequence[int]) -> tuple[int | None, tuple[int, ...]]:
        """For the sorted ``scope``: the first bag containing it and the bag's axes to sum out to
        get it (None, () when no bag contains it); checked once per scope, then remembered."""
        if (plan := self._sums.get(scope)) is None:
            keep = set(checked_scope(scope, len(self.sizes)))
            inside = self.bag_containing(keep)
            dims = () if inside is None else tuple(k for k, v in enumerate(self.bags[inside]) if v not in keep)
            plan = self._sums[scope] = (inside, dims)
        return plan

    def marginal_cells(self, scope: Iterable[int]) -> int:
        """Cells of the largest table :meth:`GibbsModel.marginal` builds for ``scope`` (public: sizes
        and the tree only), so callers can skip marginals that would not fit in memory."""
        keep = set(scope)
        inside = self.bag_containing(keep)
        if inside is not None:
            return self.cells(self.bags[inside])
        subtree = _covering_subtree(self, keep)
        top = min(subtree)
        incoming: dict[int, list[set]] = {i: [] for i in subtree}
        largest = 0
        for i in sorted(subtree - {top}, reverse=True):
            union = set(self.bags[i]).union(*incoming[i])
            largest = max(largest, self.cells(sorted(union)))
            incoming[self.parent[i]].append(union & (keep | set(self.separators[i])))
        return max(largest, self.cells(sorted(set(self.bags[top]).union(*incoming[top]))))

    @classmethod
    def bag_cells_if_added(cls, sizes: Sequence[int], scopes: Iterable[Sequence[int]], new_scope: Sequence[int]) -> int:
        """Largest bag's cell count of the decomposition of ``scopes`` plus ``new_scope`` (public sizes only)."""
        return min_fill_largest_bag(sizes, [*scopes, checked_scope(new_scope, len(sizes))])

    def largest_bag_if_added(self, new_scope: Sequence[int]) -> int:
        """:meth:`bag_cells_if_added` for this tree's scopes: this tree's own largest bag when every
        pair of ``new_scope`` is already an edge of the scopes' graph (the same graph, built in the
        same order, decomposes the same way), else the new decomposition's."""
        if all(frozenset(pair) in self._edges for pair in itertools.combinations(new_scope, 2)):
            return self.largest_bag_cells
        if self._graph is None:
            self._graph = PrimalGraph(self.sizes, self.scopes)
        return self._graph.largest_bag(checked_scope(new_scope, len(self.sizes)))


def _covering_subtree(tree: JunctionTree, scope: set[int]) -> set[int]:
    """A small connected set of bags covering ``scope``: prune, while possible, leaves whose neighbour
    holds all of their ``scope`` variables (remembered per scope: candidates ask it every round)."""
    key = frozenset(scope)
    if (found := tree._subtrees.get(key)) is not None:
        return set(found)
    if len(key) == 2:  # a pair in no common bag: the path between its variables' subtrees (the same bags)
        found = tree._subtrees[key] = frozenset(_pair_path(tree, *sorted(key)))
        return set(found)
    if tree._neighbours is None:
        tree._neighbours = [[] for _ in tree.bags]
        for i, p in enumerate(tree.parent):
            if p >= 0:
                tree._neighbours[i].append(p)
                tree._neighbours[p].append(i)
    neighbours, bag_sets = tree._neighbours, tree._bag_sets
    degree = [len(near) for near in neighbours]
    removed = [False] * len(degree)
    leaves = [i for i, k in enumerate(degree) if k == 1]
    left = len(degree)
    while leaves and left > 1:
        leaf = leaves.pop()
        near = next(j for j in neighbours[leaf] if not removed[j])
        if scope & bag_sets[leaf] <= bag_sets[near]:
            removed[leaf] = True
            left -= 1
            degree[near] -= 1
            if degree[near] == 1:
                leaves.append(near)
    found = tree._subtrees[key] = frozenset(i for i, gone in enumerate(removed) if not gone)
    return set(found)


def _pair_path(tree: JunctionTree, u: int, v: int) -> list[int]:
    """The bags on the shortest path between the bags holding ``u`` and those holding ``v`` (which
    share none). Each variable's bags form a subtree whose top bag is the one where it is not in the
    separator; when one top lies below the other variable's subtree the path climbs from it to the
    first bag holding that variable, otherwise it joins the two tops through their lowest common
    ancestor. What :func:`_covering_subtree`'s pruning leaves for a pair, in O(depth)."""
    for low, high in ((u, v), (v, u)):
        path, i = [], tree.tops[low]
        while i >= 0 and high not in tree._bag_sets[i]:
            path.append(i)
            i = tree.parent[i]
        if i >= 0:  # climbing from low's top met a bag holding high
            return path + [i]
    a, b = tree.tops[u], tree.tops[v]
    up, down = [a], [b]
    while a != b:
        if tree._depths[a] >= tree._depths[b]:
            a = tree.parent[a]
            up.append(a)
        else:
            b = tree.parent[b]
            down.append(b)
    return up + down[-2::-1]
