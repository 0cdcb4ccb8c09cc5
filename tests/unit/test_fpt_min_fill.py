"""FPT's public size decisions on wide tables: the compiled min-fill largest bag equals networkx's
decomposition, and the per-round candidate pools offer every candidate in turn."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from spark_synth.engines.fpt.engine import _CandidatePools
import itertools

import networkx as nx
from networkx.algorithms.approximation import treewidth_min_fill_in

from spark_synth.engines.fpt.graphical import JunctionTree
from spark_synth.engines.fpt.min_fill import PrimalGraph, _largest_bag_python, min_fill_largest_bag


def _networkx_largest(sizes, scopes) -> int:
    graph = nx.Graph()
    graph.add_nodes_from(range(len(sizes)))
    for scope in scopes:
        graph.add_edges_from(itertools.combinations(scope, 2))
    return max(math.prod(sizes[v] for v in bag) for bag in treewidth_min_fill_in(graph)[1])


def _random_graph(rng: random.Random, d: int):
    sizes = [rng.randint(1, 9) for _ in range(d)]
    scopes = [(v,) for v in range(d)]
    scopes += [tuple(sorted(rng.sample(range(d), min(d, rng.randint(2, 3))))) for _ in range(rng.randint(0, 2 * d))]
    return sizes, scopes


@pytest.mark.parametrize("seed", range(4))
def test_largest_bag_equals_networkx_min_fill(seed):
    rng = random.Random(seed)
    for _ in range(300):
        sizes, scopes = _random_graph(rng, rng.randint(1, 25))
        assert min_fill_largest_bag(sizes, scopes) == _networkx_largest(sizes, scopes), (sizes, scopes)


def test_compiled_and_reference_elimination_agree():
    rng = random.Random(7)
    for _ in range(200):
        sizes, scopes = _random_graph(rng, rng.randint(2, 20))
        graph = PrimalGraph(sizes, scopes)
        floats = np.asarray(sizes, dtype=np.float64)
        from spark_synth.engines.fpt import min_fill

        compiled = min_fill._largest_bag(graph.adjacency.copy(), floats)
        reference = _largest_bag_python(graph.adjacency.copy(), floats)
        assert math.prod(sizes[v] for v in np.flatnonzero(compiled)) == math.prod(sizes[v] for v in np.flatnonzero(reference))


def test_largest_bag_with_an_added_scope_equals_a_new_decomposition():
    rng = random.Random(3)
    for _ in range(100):
        d = rng.randint(3, 20)
        sizes, scopes = _random_graph(rng, d)
        tree = JunctionTree(sizes, scopes)
        for new in [tuple(sorted(rng.sample(range(d), 2))) for _ in range(5)]:
            assert tree.largest_bag_if_added(new) == _networkx_largest(sizes, scopes + [new])


def test_a_chain_closed_into_a_cycle_needs_a_wider_bag():
    sizes, chain = [3, 3, 3, 3], [(0, 1), (1, 2), (2, 3)]
    assert min_fill_largest_bag(sizes, chain) == 9
    assert PrimalGraph(sizes, chain).largest_bag((0, 3)) == 27  # a 4-cycle triangulates into bags of 3


def test_candidate_pools_offer_every_candidate_in_turn():
    candidates = [f"c{i}" for i in range(23)]
    pools = _CandidatePools(candidates, limit=5)
    seen = [pools.next() for _ in range(5)]
    assert all(len(pool) == 5 and len(set(pool)) == 5 for pool in seen)
    assert set().union(*seen[:4]) | set(seen[4]) == set(candidates)  # 23 candidates: offered within 5 rounds
    again = _CandidatePools(candidates, limit=5)
    assert [again.next() for _ in range(5)] == seen  # a fixed public seed: the same pools every fit
    assert _CandidatePools(candidates, limit=30).next() == candidates  # few candidates: all of them, every round


def _pruned_subtree(tree: JunctionTree, scope: set) -> set:
    """The covering subtree by pruning leaves (the general rule), from scratch."""
    near = {i: set() for i in range(len(tree.bags))}
    for i, p in enumerate(tree.parent):
        if p >= 0:
            near[i].add(p)
            near[p].add(i)
    leaves = [i for i, n in near.items() if len(n) == 1]
    while leaves and len(near) > 1:
        leaf = leaves.pop()
        (up,) = near[leaf]
        if scope & set(tree.bags[leaf]) <= set(tree.bags[up]):
            del near[leaf]
            near[up].discard(leaf)
            if len(near[up]) == 1:
                leaves.append(up)
    return set(near)


def test_a_pairs_covering_subtree_is_the_pruned_one():
    from spark_synth.engines.fpt.graphical import _covering_subtree

    rng, checked = random.Random(5), 0
    for _ in range(150):
        d = rng.randint(3, 25)
        sizes, scopes = _random_graph(rng, d)
        tree = JunctionTree(sizes, scopes)
        for pair in itertools.combinations(range(d), 2):
            if tree.bag_containing(pair) is None:
                assert _covering_subtree(tree, set(pair)) == _pruned_subtree(tree, set(pair)), (pair, tree.bags, tree.parent)
                checked += 1
    assert checked > 1000
