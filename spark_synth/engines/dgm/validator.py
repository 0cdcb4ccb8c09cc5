"""The end-to-end DP validator: a density-ratio score fitted to noisy cross-partition pair marginals.

Joining independently drawn partition pieces at random gives rows from p_join = Π_k p_k. The
validator scores a candidate row x by s(x) = Σ_{(i, j)} T_ij(x_i, x_j) + Σ_j U_j(x_j), a log-linear
reweighting of p_join fitted (iterative proportional fitting on a public sample of random joins)
so that the reweighted rows have the noisy cross-partition pair marginals p̂_ij that were measured,
and keep every column's own marginal as the partition models have it. exp(s) is then the maximum
entropy estimate of p_real / p_join given those pairs, and accepting candidates with probability
∝ exp(s) (:mod:`.join`) moves joined rows towards it. Pairs that share columns are fitted jointly,
so a dependence seen through several pairs is not counted several times. Everything here is
post-processing of DP releases and of draws from the fitted partition models.
"""

from __future__ import annotations

import numpy as np

from ..postprocess import probabilities_from_counts

#: Proportional-fitting sweeps over the measured pairs.
SWEEPS = 30


class PairRatioValidator:
    """Per measured pair (i, j): the column groupings (code → group) and a log-weight table; per column
    in a pair, a unary log-weight table over its groups."""

    def __init__(self, pairs, groupings, pair_tables, columns, unary_tables):
        self.pairs = [tuple(int(v) for v in p) for p in pairs]
        self.groupings = {int(j): np.asarray(g, dtype=np.int64) for j, g in groupings.items()}
        self.pair_tables = [np.asarray(t, dtype=np.float64) for t in pair_tables]
        self.columns = [int(j) for j in columns]
        self.unary_tables = [np.asarray(t, dtype=np.float64) for t in unary_tables]

    @classmethod
    def fit(cls, pairs, groupings: dict, noisy_tables, sigmas, total: float, joined: np.ndarray,
            column_marginals: dict) -> "PairRatioValidator":
        """Fit the log-weights on ``joined`` (random joins of partition draws) to the noisy pair tables
        (projected onto the simplex, floored at the noise level) and the columns' ``column_marginals``."""
        targets = []
        for values, sigma in zip(noisy_tables, sigmas):
            values = np.asarray(values, dtype=np.float64)
            joint = probabilities_from_counts(values.ravel(), total).reshape(values.shape) + sigma / max(total, 1.0)
            targets.append(joint / joint.sum())
        columns = sorted({j for p in pairs for j in p})
        groups = {j: groupings[j][joined[:, j]] for j in columns}
        sizes = {j: int(groupings[j].max()) + 1 for j in columns}
        pair_tables = [np.zeros(t.shape) for t in targets]
        unary = {j: np.zeros(sizes[j]) for j in columns}
        unary_targets = {j: np.asarray(column_marginals[j], dtype=np.float64) + 1e-12 for j in columns}
        log_w = np.zeros(len(joined))
        for _ in range(SWEEPS):
            for (i, j), table, target in zip(pairs, pair_tables, targets):
                current = _weighted_histogram(log_w, (groups[i], groups[j]), target.shape)
                step = np.log(target) - np.log(current + 1e-12)
                table += step
                log_w += step[groups[i], groups[j]]
            for j in columns:
                current = _weighted_histogram(log_w, (groups[j],), (sizes[j],))
                step = np.log(unary_targets[j]) - np.log(current + 1e-12)
                unary[j] += step
                log_w += step[groups[j]]
        return cls(pairs, {j: groupings[j] for j in columns}, pair_tables, columns, [unary[j] for j in columns])

    def score(self, codes: np.ndarray) -> np.ndarray:
        """s(x) for each row of a code matrix (schema order)."""
        out = np.zeros(len(codes), dtype=np.float64)
        for (i, j), table in zip(self.pairs, self.pair_tables):
            out += table[self.groupings[i][codes[:, i]], self.groupings[j][codes[:, j]]]
        for j, table in zip(self.columns, self.unary_tables):
            out += table[self.groupings[j][codes[:, j]]]
        return out

    def to_state(self) -> dict:
        return {"pairs": [list(p) for p in self.pairs], "groupings": [[j, g.tolist()] for j, g in self.groupings.items()],
                "pair_tables": [t.tolist() for t in self.pair_tables], "columns": self.columns,
                "unary_tables": [t.tolist() for t in self.unary_tables]}

    @classmethod
    def from_state(cls, state: dict) -> "PairRatioValidator":
        return cls(state["pairs"], {j: g for j, g in state["groupings"]}, state["pair_tables"], state["columns"],
                   state["unary_tables"])


def _weighted_histogram(log_w: np.ndarray, keys: tuple, shape: tuple) -> np.ndarray:
    """Shares of the rows (weights exp(log_w)) in each cell of ``shape`` indexed by ``keys``."""
    weights = np.exp(log_w - log_w.max())
    flat = np.ravel_multi_index(keys, shape)
    counts = np.bincount(flat, weights=weights, minlength=int(np.prod(shape))).reshape(shape)
    return counts / counts.sum()
