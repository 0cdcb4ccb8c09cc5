"""Exact inference on a discrete Gibbs distribution p(x) ∝ exp(Σ_c θ_c(x_c)) over a junction tree.

Variables are 0..d-1 with public domain sizes; each factor θ_c is a log-potential table over a sorted
scope c. A :class:`JunctionTree` is the rooted min-fill tree decomposition of the scopes' primal graph.
On it, :class:`GibbsModel` calibrates in log space (log Z and every bag's marginal), answers exact
marginals over any set of variables and draws exact samples; :func:`max_sum` maximises Σ_c w_c(x_c)
exactly (an LP separation oracle).

Tables are float64 tensors whose axes follow a sorted tuple of variables ("labelled" tables); the
cost of every operation is bounded by bag sizes (times the queried scope's domain), never the joint.

The tree is :mod:`.junction_tree`, the table operations :mod:`.labelled_tables`; this module passes
messages over it.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import torch

from ..stratified import stratified_uniforms
from .junction_tree import JunctionTree, _covering_subtree, _pair_path  # noqa: F401 (re-exported)
from .labelled_tables import (Reducer, Scope, _align, _amax, _configurations, _flat_index,  # noqa: F401 (re-exported)
                              _inverse_cdf, _logsumexp, _product, _reduce, _split, _sum, _tiny)


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
