"""SPLICE's pair anchors: DP 2-way tables of the pairs a first moment fit misses most, matched in Match.

Sliced moments pin down the 1-way laws and much of the numeric dependence, but even noiseless they
leave some categorical pairs loose: on adult a Match on exact moments reached 2-way TVD 0.050 where
a mixture of as many products fitted to the rows by EM reaches 0.024, and the worst pair
(education × education-num, one a function of the other) stayed at 0.78, as if independent
(docs/splice.md, "Pair anchors"). So a first Match on the moments (post-processing) answers every
candidate pair's 2-way table (numeric and ordinal columns merged into at most ``pair_groups``
public ranges, then groups holding fewer DP rows than the pair noise allows merged away); in each
of ``pair_count`` rounds the exponential mechanism picks the table the model misses most, less its
expected noise (AIM's score); the chosen tables are measured with the rest of the share
``pair_share`` of ρ, and the final Match fits the moments and these tables together.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple, Sequence

import numpy as np

from ...privacy import NoisyMeasurement
from ...queries import MarginalQuery
from ...schema import Schema

#: Rows drawn from the first model to score the candidate pairs (post-processing; a public constant).
SCORING_ROWS = 100_000
#: Share of each pair round's ρ that selects the pair (the rest measures it), as AIM's.
PAIR_SELECT_SHARE = 0.1
#: Largest pair table measured (cells over groups): beyond it the noise swamps the shares.
PAIR_MAX_CELLS = 4096


def model_tables(model, queries: Sequence[MarginalQuery], schema: Schema, rows: float, rng: np.random.Generator) -> list[np.ndarray]:
    """The model's answers to the pair ``queries`` in counts of ``rows`` rows, estimated from
    ``SCORING_ROWS`` of its draws (post-processing)."""
    codes = model.sample_codes(SCORING_ROWS, rng)
    out = []
    for query in queries:
        shape = query.answer_shape(schema)
        a, b = (codes[:, schema.names.index(name)] if groups is None else np.asarray(groups)[codes[:, schema.names.index(name)]]
                for name, groups in zip(query.columns, query.groupings or (None, None)))
        table = np.bincount(a * shape[1] + b, minlength=shape[0] * shape[1]).reshape(shape)
        out.append(table * (rows / SCORING_ROWS))
    return out


def candidate_pairs(schema: Schema, gaussian: Sequence[int], rank: int) -> list[tuple[int, int]]:
    """Every pair of columns; two Gaussian-block columns only when the block's rank is at most 1
    (:class:`PairMisfit` integrates over one shared factor)."""
    return [(a, b) for a, b in itertools.combinations(range(len(schema)), 2) if rank <= 1 or not (a in gaussian and b in gaussian)]


def pair_query(schema: Schema, pair: tuple[int, int], groupings) -> MarginalQuery:
    a, b = pair
    return MarginalQuery(columns=(schema.columns[a].name, schema.columns[b].name), groupings=(groupings[a], groupings[b]))


class PairTarget(NamedTuple):
    """A measured pair's noisy table as shares of the DP row count, and its noise σ in those units."""

    columns: tuple[int, int]
    groupings: tuple
    shares: np.ndarray
    sigma: float


def pair_targets(schema: Schema, measurements: Sequence[NoisyMeasurement], rows: float) -> list[PairTarget]:
    """The 2-way releases among ``measurements`` as :class:`PairTarget`."""
    index = {c.name: j for j, c in enumerate(schema)}
    out = []
    for m in measurements:
        if isinstance(m.query, MarginalQuery) and len(m.columns) == 2:
            groupings = m.query.groupings or (None, None)
            out.append(PairTarget(tuple(index[c] for c in m.columns), groupings, np.asarray(m.values, dtype=np.float64) / rows,
                                  float(m.sigma) / rows))
    return out


def _group_edges(embedding, j: int, groups: np.ndarray, device):
    """Block column j's inner edges between consecutive value groups (its null code, if any, is
    the last group of its own)."""
    import torch

    n_values = embedding.schema.columns[j].n_values
    inner = embedding.value_edges(j)[1:-1]
    changes = np.flatnonzero(groups[1:n_values] != groups[: n_values - 1])
    return torch.as_tensor(inner[changes], dtype=torch.float64, device=device)


#: Gauss–Hermite nodes over the shared factor when both columns of a pair are in the Gaussian block.
QUADRATURE_NODES = 24


class PairMisfit:
    """Σ over measured pairs of scale/σ² · ‖T − t̃‖², T the mixture's grouped 2-way table (torch).

    T = Σ_k w_k E_z[P_k(a-group | z) ⊗ P_k(b-group | z)]. A code column's group probabilities do not
    depend on z; a Gaussian-block column's are normal-CDF differences at its public edges (mass
    beyond ±1 in the end bins), its DP null share as a group of its own. Given the block's rank-1
    factor z ~ N(0, 1), two block columns are independent, so their joint table is a Gauss–Hermite
    sum over z (``QUADRATURE_NODES``); with one block column the exact marginal is used (no z).
    """

    def __init__(self, schema: Schema, embedding, gaussian: Sequence[int], null_shares: dict, pairs: Sequence[PairTarget],
                 scale: float, device):
        import torch

        self.gaussian = tuple(gaussian)
        code_columns = [j for j in range(len(schema)) if j not in self.gaussian]
        self.code_index = {j: i for i, j in enumerate(code_columns)}
        self.null_shares, self.nullable = null_shares, {j: schema.columns[j].nullable for j in self.gaussian}
        nodes, node_weights = np.polynomial.hermite_e.hermegauss(QUADRATURE_NODES)  # ∫ f(z) e^{-z²/2}
        self.nodes = torch.as_tensor(nodes, dtype=torch.float64, device=device)
        self.node_weights = torch.as_tensor(node_weights / node_weights.sum(), dtype=torch.float64, device=device)
        self.terms = []
        for pair in pairs:
            maps = [self.group_map(schema, embedding, j, groups, device) for j, groups in zip(pair.columns, pair.groupings)]
            self.terms.append((pair.columns, maps, torch.as_tensor(pair.shares, dtype=torch.float64, device=device),
                               scale / pair.sigma ** 2))
        self._batch(pairs, device)

    def _batch(self, pairs: Sequence[PairTarget], device) -> None:
        """Index every cell of the pairs with at most one Gaussian-block column into one product of
        the columns' stacked group probabilities, so :meth:`__call__` computes all their tables in one
        matrix product (the pairs of two block columns keep :meth:`table`'s quadrature)."""
        import torch

        self.stacked, self.quadrature = [], []  # (column, group map) in stacked order; term indices
        offsets: dict = {}  # (column, grouping) -> its first row in the stack
        width = 0
        rows, cols, targets, scales = [], [], [], []
        for index, ((a, b), maps, shares, scale) in enumerate(self.terms):
            if a in self.gaussian and b in self.gaussian:
                self.quadrature.append(index)
                continue
            starts = []
            for j, groups, group_map, size in zip((a, b), pairs[index].groupings, maps, shares.shape):
                key = (j, None if groups is None else tuple(np.asarray(groups).tolist()))
                if key not in offsets:
                    offsets[key], width = width, width + size
                    self.stacked.append((j, group_map))
                starts.append(offsets[key])
            na, nb = shares.shape
            rows.append(np.repeat(starts[0] + np.arange(na), nb))
            cols.append(np.tile(starts[1] + np.arange(nb), na))
            targets.append(shares.reshape(-1))
            scales.append(np.full(na * nb, scale))
        as_index = lambda parts: torch.as_tensor(np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64), device=device)
        self.rows, self.cols = as_index(rows), as_index(cols)
        self.targets = torch.cat(targets) if targets else torch.zeros(0, dtype=torch.float64, device=device)
        self.cell_scales = torch.as_tensor(np.concatenate(scales) if scales else np.zeros(0), dtype=torch.float64, device=device)

    def group_map(self, schema: Schema, embedding, j: int, groups, device):
        """Column j's public merge (None: every code its own group) in the form :meth:`column_groups`
        takes: codes → groups as a one-hot matrix (a code column), or the inner group edges (a block column)."""
        import torch

        groups = np.arange(schema.columns[j].size) if groups is None else np.asarray(groups)
        if j in self.code_index:
            return torch.as_tensor(np.eye(int(groups.max()) + 1)[groups], dtype=torch.float64, device=device)
        return _group_edges(embedding, j, groups, device)

    def column_groups(self, j: int, group_map, probabilities, block):
        """(K, groups): each component's probabilities of column j's groups (a block column's marginal ones)."""
        if j in self.code_index:
            return probabilities[self.code_index[j]] @ group_map
        return self._block_groups(j, group_map, block, False)[:, 0, :]

    def _block_groups(self, j, edges, block, given_z: bool):
        """(K, Q, groups) group probabilities of block column j given each node z (Q = 1: marginal)."""
        import torch

        i = self.gaussian.index(j)
        mean, factor = block.mean[:, i, None], block.factor[:, i, :]  # (K, 1), (K, R)
        if given_z:
            mean = mean + factor[:, :1] * self.nodes[None, :]  # rank ≤ 1 (candidate_pairs admits no pair otherwise)
            std = torch.sqrt(block.diag[:, i, None] + (factor[:, 1:] ** 2).sum(-1, keepdim=True))
        else:
            std = torch.sqrt(block.diag[:, i, None] + (factor ** 2).sum(-1, keepdim=True))
        cdf = torch.special.ndtr((edges[None, None, :] - mean[..., None]) / std[..., None])  # (K, Q, edges)
        ones = cdf.new_ones((*cdf.shape[:-1], 1))  # (not ones_like(cdf[..., :1]): with no inner edge cdf is empty)
        bins = torch.diff(torch.cat([0 * ones, cdf, ones], -1), dim=-1) * (1 - self.null_shares[j])
        if self.nullable[j]:
            bins = torch.cat([bins, self.null_shares[j] * ones], -1)
        return bins

    def table(self, index: int, weights, probabilities, block):
        """The mixture's grouped table of the ``index``-th measured pair."""
        import torch

        (a, b), (ga, gb), _, _ = self.terms[index]
        both = a in self.gaussian and b in self.gaussian and block.factor.shape[-1] > 0  # rank 0: independent given k
        parts = [probabilities[self.code_index[j]][:, None, :] @ g if j in self.code_index else self._block_groups(j, g, block, both)
                 for j, g in ((a, ga), (b, gb))]
        node_weights = self.node_weights if both else torch.ones(1, dtype=torch.float64, device=weights.device)
        return torch.einsum("k,q,kqa,kqb->ab", weights, node_weights, parts[0], parts[1])

    def __call__(self, weights, probabilities, block):
        """Σ_pairs scale/σ² · ‖T − t̃‖²: the tables with at most one block column as cells of
        Gᵀ diag(w) G, G the (K, groups) stacked group probabilities of their columns; the others by :meth:`table`."""
        import torch

        total = 0.0
        if self.stacked:
            stacked = torch.cat([self.column_groups(j, m, probabilities, block) for j, m in self.stacked], dim=1)
            joint = stacked.T @ (weights[:, None] * stacked)
            total = (self.cell_scales * (joint[self.rows, self.cols] - self.targets) ** 2).sum()
        for i in self.quadrature:
            _, _, shares, scale = self.terms[i]
            total = total + scale * ((self.table(i, weights, probabilities, block) - shares) ** 2).sum()
        return total


class ComponentSpread:
    """Σ over columns of Σ_k w_k ‖P_k(c) − Σ_l w_l P_l(c)‖²: how far each column's grouped distribution
    moves between the mixture's components — a χ²-type measure of what the component label tells
    about the column (torch).

    Weighted in the final Match, it keeps a column's distribution the same in every component unless
    a release calls for the difference: dependence then appears where the measured tables and the
    moments ask for it, and not between columns no release ties together (a maximum-entropy-like
    prior, as a graphical model's). A code column's groups are its public merge (``groupings``); a
    block column's are its per-component marginal bin probabilities at the public group edges."""

    def __init__(self, misfit: PairMisfit, schema: Schema, embedding, columns: Sequence[int], groupings, scale: float, device):
        self.misfit, self.columns, self.scale = misfit, list(columns), scale
        self.maps = [misfit.group_map(schema, embedding, j, groupings[j], device) for j in self.columns]

    def __call__(self, weights, probabilities, block):
        total = 0.0
        for j, group_map in zip(self.columns, self.maps):
            p = self.misfit.column_groups(j, group_map, probabilities, block)
            total = total + weights @ ((p - weights @ p) ** 2).sum(1)
        return self.scale * total


#: Pair names a progress line shows before it says how many more there are.
SHOWN_PAIRS = 3


def anchors_line(names: Sequence[str], shown: int = SHOWN_PAIRS) -> str:
    """The progress line's text for the chosen pair anchors: how many, the first ``shown`` by name
    (the whole list is in the fit's privacy report, one release per pair)."""
    if not names:
        return "splice: pair anchors: none chosen"
    head = ", ".join(names[:shown])
    more = f", ... and {len(names) - shown} more" if len(names) > shown else ""
    return f"splice: pair anchors: {len(names)} chosen ({head}{more}; all in the privacy report)"
