"""Exact inference on a discrete Gibbs distribution p(x) ∝ exp(Σ_c θ_c(x_c)) over a junction tree.

Variables are 0..d-1 with public domain sizes; each factor θ_c is a log-potential table over a sorted
scope c. A :class:`JunctionTree` is the rooted min-fill tree decomposition of the scopes' primal graph.
On it, :class:`GibbsModel` calibrates in log space (log Z and every bag's marginal), answers exact
marginals over any set of variables and draws exact samples; :func:`max_sum` maximises Σ_c w_c(x_c)
exactly (an LP separation oracle).

Tables are float64 tensors whose axes follow a sorted tuple of variables ("labelled" tables); the
cost of every operation is bounded by bag sizes (times the queried scope's domain), never the joint.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np
import torch

from ..stratified import stratified_uniforms
from .draws import TreeStructure, checked_scope
from .min_fill import PrimalGraph, min_fill_largest_bag

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


# ---- labelled tables --------------------------------------------------------------------------------
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


# ---- the junction tree ------------------------------------------------------------------------------
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


def _bag_tables(tree: JunctionTree, tables: Mapping[Sequence[int], object], device: torch.device) -> list[torch.Tensor]:
    """Each bag's sum of the tables assigned to it (each table goes to the first bag containing its scope)."""
    bag_tables = [torch.zeros(tree.shape(bag), dtype=torch.float64, device=device) for bag in tree.bags]
    for scope, table in tables.items():
        i, shape, aligned = tree.place(tuple(scope))
        table = torch.as_tensor(table, dtype=torch.float64, device=device)
        if table.shape != shape:
            raise ValueError(f"table of scope {tuple(scope)} must be finite with shape {shape}")
        bag_tables[i] += table.reshape(aligned)
    for table, bag in zip(bag_tables, tree.bags):  # a non-finite entry of any table stays non-finite in its sum
        if not torch.isfinite(table).all():
            scopes = [tuple(s) for s in tables if set(s) <= set(bag)]
            raise ValueError(f"the tables of scopes {scopes} must be finite")
    return bag_tables


def _collect(tree: JunctionTree, tables: list[torch.Tensor], reducer: Reducer) -> tuple[list, list]:
    """Upward pass: each bag's table plus its children's messages, and each bag's message to its parent."""
    totals, messages = list(tables), [None] * len(tables)
    for i in reversed(range(len(tables))):
        if (p := tree.parent[i]) >= 0:
            outside = tree.outside[i]
            messages[i] = reducer(totals[i], outside) if outside else totals[i]
            totals[p] = totals[p] + messages[i].reshape(tree.separator_in_parent[i])
    return totals, messages


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


def _inverse_cdf(probabilities: torch.Tensor, rows: torch.Tensor, uniforms: torch.Tensor) -> torch.Tensor:
    """Column drawn from row ``rows[j]`` of the (S, K) probability matrix with uniform ``uniforms[j]``:
    one search in the rows' cumulative sums laid end to end (row s spans [s, s + 1])."""
    cumulative = probabilities.cumsum(dim=1)
    cumulative = cumulative / cumulative[:, -1:]
    offsets = torch.arange(len(probabilities), dtype=torch.float64, device=probabilities.device)[:, None]
    flat = torch.searchsorted((cumulative + offsets).reshape(-1), rows + uniforms, right=True)
    return torch.clamp(flat - rows * probabilities.shape[1], 0, probabilities.shape[1] - 1)


# ---- inference --------------------------------------------------------------------------------------
class GibbsModel:
    """p(x) ∝ exp(Σ_c θ_c(x_c)) on a junction tree: calibration, exact marginals, exact sampling.

    ``potentials`` maps sorted scopes (each inside a bag of ``tree``) to log-potential tables;
    missing scopes count as zero.
    """

    def __init__(self, tree: JunctionTree, potentials: Mapping[Sequence[int], object], device=None):
        self.tree = tree
        self.device = torch.device(device or "cpu")
        self.log_potentials = _bag_tables(tree, potentials, self.device)
        self.log_partition: float | None = None  # log Z, set by calibrate()
        self.log_beliefs: list[torch.Tensor] = []  # each bag's log-marginal, axes = the bag
        self._log_conditionals: list[torch.Tensor] = []  # log p(bag \ separator | separator)

    @classmethod
    def from_log_potentials(cls, tree: JunctionTree, bag_tables: Sequence[torch.Tensor], device=None) -> GibbsModel:
        """The model whose bag i has log-potential table ``bag_tables[i]`` (axes = the bag; not checked:
        for fitters that keep θ per bag themselves)."""
        model = cls.__new__(cls)
        model.tree, model.device = tree, torch.device(device or "cpu")
        model.log_potentials = list(bag_tables)
        model.log_partition, model.log_beliefs, model._log_conditionals = None, [], []
        return model

    def calibrate(self) -> GibbsModel:
        """Log-space sum-product (upward then downward pass): sets ``log_partition`` and ``log_beliefs``."""
        tree = self.tree
        upward, messages = _collect(tree, self.log_potentials, _logsumexp)
        self.log_partition = float(torch.logsumexp(upward[0].reshape(-1), dim=0))
        beliefs = self.log_beliefs = [upward[0] - self.log_partition]  # filled root first
        self._beliefs = [None] * len(tree.bags)  # each bag's probability table, when first needed
        for i in range(1, len(tree.bags)):
            # the parent's separator marginal divided by the message bag i sent it (the message is
            # constant along the axes summed out); the marginal is summed in probability space (a
            # normalised belief cannot overflow; the floor keeps a vanishing cell finite, so no NaN follows)
            outside, p = tree.parent_outside[i], tree.parent[i]
            separator = (self.belief(p).sum(dim=outside).clamp_min(_tiny(upward[p])).log() if outside else beliefs[p])
            downward = separator - messages[i]  # both over the separator's variables, in order
            beliefs.append(upward[i] + downward.reshape(tree.separator_in_bag[i]))
        self._log_conditionals = []  # computed when first needed (sampling, marginals across bags)
        self._conditional_tables = [None] * len(beliefs)  # and its conditional's
        return self

    def _conditionals(self) -> list[torch.Tensor]:
        """log p(bag \\ separator | separator) for every bag (from the calibrated beliefs)."""
        if not self._log_conditionals:
            tree = self.tree
            self._log_conditionals = [
                belief - (torch.logsumexp(belief, dim=outside) if outside else belief).reshape(viewed)
                for belief, outside, viewed in zip(self.log_beliefs, tree.outside, tree.separator_in_bag)
            ]
        return self._log_conditionals

    def _calibrated(self) -> GibbsModel:
        return self if self.log_partition is not None else self.calibrate()

    def marginal(self, scope: Sequence[int]) -> torch.Tensor:
        """Exact probability table over the sorted variables ``scope`` (axes in that order).

        On a small subtree covering ``scope``, the joint is the top bag's belief times its other bags'
        conditionals given their separators; bags are eliminated from the leaves inwards, each message
        keeping only its separator and the ``scope`` variables met so far.
        """
        tree = self._calibrated().tree
        inside, dims = tree.summed_out(tuple(scope))
        if inside is not None:  # the common case: sum the bag's marginal down to the scope
            belief = self.belief(inside)
            return belief.sum(dim=dims) if dims else belief
        keep = set(scope)
        subtree = _covering_subtree(tree, keep)
        top = min(subtree)  # bags are in BFS order, so the subtree's top has the smallest index
        incoming: dict[int, list] = {i: [] for i in subtree}
        for i in sorted(subtree - {top}, reverse=True):  # in probability space: conditionals are in [0, 1]
            variables, table = _product([(tree.bags[i], self._probability_conditional(i)), *incoming[i]])
            incoming[tree.parent[i]].append(_reduce(table, variables, keep | set(tree.separators[i]), _sum))
        variables, table = _product([(tree.bags[top], self.belief(top)), *incoming[top]])
        return _reduce(table, variables, keep, _sum)[1]

    def marginals(self, scopes: Sequence[Sequence[int]]) -> list[torch.Tensor]:
        """:meth:`marginal` of each sorted scope, in order; pairs in no common bag share their work.

        For such a pair (u, v), p(u, x_b) is carried bag by bag along the path from u's bags to v's:
        p(u, x_b) = p(x_b) · p(u | x_S) over the separator S with the previous bag. Every pair with
        the same u (the smaller domain of the two) reuses the bags its paths share, so a round's
        candidate pairs cost about one pass per variable, not one per pair.
        """
        tree = self._calibrated().tree
        out: dict[tuple, torch.Tensor] = {}
        by_anchor: dict[int, list[tuple]] = {}
        for scope in dict.fromkeys(map(tuple, scopes)):
            if len(scope) == 2 and tree.summed_out(scope)[0] is None:
                by_anchor.setdefault(min(scope, key=lambda v: (tree.sizes[v], v)), []).append(scope)
            else:
                out[scope] = self.marginal(scope)
        for u, pairs in by_anchor.items():
            joint: dict[int, tuple[Scope, torch.Tensor]] = {}  # bag -> (variables, p(u, x_bag))
            for scope in pairs:
                v = scope[1] if scope[0] == u else scope[0]
                path = _pair_path(tree, u, v)
                if u not in tree._bag_sets[path[0]]:
                    path = path[::-1]
                if path[0] not in joint:
                    joint[path[0]] = (tree.bags[path[0]], self.belief(path[0]))
                for a, b in zip(path, path[1:]):
                    if b not in joint:
                        joint[b] = self._carried(u, *joint[a], b)
                variables, table = joint[path[-1]]
                variables, table = _reduce(table, variables, {u, v}, _sum)
                out[scope] = table if variables == scope else table.transpose(0, 1)
        return [out[tuple(scope)] for scope in scopes]

    def _carried(self, u: int, variables: Scope, table: torch.Tensor, bag: int) -> tuple[Scope, torch.Tensor]:
        """p(u, x_bag) from p(u, x_variables) of an adjacent bag (u not in ``bag``): p(x_bag) · p(u | x_S)."""
        tree = self.tree
        separator = set(variables) & tree._bag_sets[bag]
        kept, joint = _reduce(table, variables, separator | {u}, _sum)  # p(u, x_S)
        _, marginal = _reduce(joint, kept, separator, _sum)  # p(x_S)
        conditional = joint / _align(marginal, tuple(v for v in kept if v != u), kept).clamp_min(_tiny(joint))
        return _product([(tree.bags[bag], self.belief(bag)), (kept, conditional)])

    def belief(self, i: int) -> torch.Tensor:
        """Bag i's probability table, axes = the bag (cached until the next calibration)."""
        if self._beliefs[i] is None:
            self._beliefs[i] = self.log_beliefs[i].exp()
        return self._beliefs[i]

    def _probability_conditional(self, i: int) -> torch.Tensor:
        """p(bag i \\ separator | separator) as probabilities (cached until the next calibration)."""
        if self._conditional_tables[i] is None:
            self._conditional_tables[i] = self._conditionals()[i].exp()
        return self._conditional_tables[i]

    def sample(self, n: int, generator: torch.Generator | int) -> torch.Tensor:
        """(n, d) int64 exact samples: the root bag from its marginal, then (root first) each bag's other
        variables from their conditional given its separator's values; ``generator`` may be a seed.
        Each row is an exact draw; the uniforms are stratified among rows that share a separator
        value (:mod:`..stratified`), so every bag's counts are its expected counts, rounded."""
        tree = self._calibrated().tree
        if isinstance(generator, int):
            generator = torch.Generator(device=self.device).manual_seed(generator)
        rng = np.random.default_rng(int(torch.randint(0, 2**62, (1,), generator=generator, device=self.device)))
        out = torch.zeros((n, len(tree.sizes)), dtype=torch.int64, device=self.device)
        for bag, separator, conditional in zip(tree.bags, tree.separators, self._conditionals()):
            probabilities, rest = _split(conditional.exp(), bag, separator)
            rows = _flat_index(out[:, list(separator)], tree.shape(separator))
            groups = rows.cpu().numpy() if separator else None  # the root bag: one group, no sort
            uniforms = torch.as_tensor(stratified_uniforms(n, rng, groups), device=self.device)
            out[:, list(rest)] = _configurations(_inverse_cdf(probabilities, rows, uniforms), tree.shape(rest))
        return out


def max_sum(tree: JunctionTree, weights: Mapping[Sequence[int], object], device=None) -> tuple[float, list[int]]:
    """max over x of Σ_c w_c(x_c) and a maximiser (length-d list), by max-sum over ``tree`` then
    backtracking root first; ``weights`` maps scopes inside bags to tables, missing scopes are zero."""
    device = torch.device(device or "cpu")
    totals, _ = _collect(tree, _bag_tables(tree, weights, device), _amax)
    best = torch.zeros(len(tree.sizes), dtype=torch.int64, device=device)
    for bag, separator, total in zip(tree.bags, tree.separators, totals):
        table, rest = _split(total, bag, separator)
        row = _flat_index(best[list(separator)][None], tree.shape(separator))[0]
        best[list(rest)] = _configurations(table[row].argmax(), tree.shape(rest))
    return float(totals[0].max()), best.tolist()
