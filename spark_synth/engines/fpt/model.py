"""The fitted FPT model: a Gibbs distribution on a junction tree, sampled exactly (post-processing).

Sampling needs NumPy only (:mod:`.draws`): this module does not import torch, so a Spark worker
that unpickles a model and draws rows never loads it. :meth:`FptModel.gibbs` (the driver's and the
tests' exact marginals across bags) imports torch when called.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from ...errors import InternalError
from ...schema import Schema
from ..base import FittedModel
from ..stratified import inverse_cdf, stratified_choice, stratified_uniforms
from ..evidence import Evidence
from .conditioning import conditioned_parts
from .draws import TreeSampler, TreeStructure

if TYPE_CHECKING:
    from .graphical import GibbsModel


class FptModel(FittedModel):
    """log-potential tables over clique scopes of the columns' model codes, the DP row estimate, and
    per coarsened column its public grouping, the DP 1-way distribution over its fine codes and,
    when the target's table with the column was measured, factors r(code, t) ≈ P(t | code) /
    P(t | group): a sampled group becomes a fine code drawn within the group ∝ P(code)·r(code, t)
    at the row's target code t (∝ P(code) without them)."""

    engine = "fpt"

    def __init__(self, code_sizes, sizes, potentials: dict, estimated_rows: float, refinements: dict | None = None,
                 support: np.ndarray | None = None, weights: np.ndarray | None = None, summary: dict | None = None,
                 target: int | None = None, tree: TreeStructure | None = None):
        self.code_sizes = tuple(int(s) for s in code_sizes)
        self.sizes = tuple(int(s) for s in sizes)
        self.refinements = {int(j): _refinement(*r) for j, r in (refinements or {}).items()}
        self.target = None if target is None else int(target)
        self.potentials = {tuple(int(v) for v in s): _table(t) for s, t in potentials.items()}
        self.estimated_rows = float(estimated_rows)
        self.support = None if support is None else np.asarray(support, dtype=np.int64)  # LP mode: a sparse histogram
        self.weights = None if weights is None else np.asarray(weights, dtype=np.float64)
        self._summary = dict(summary or {})  # public facts of the fit: width, rounds, selected query names
        # the potentials' junction tree (the fit's decomposition; public sizes only): built here, on the
        # driver, so a Spark worker that unpickles the model runs no min-fill
        self.tree = tree or TreeStructure.min_fill(self.sizes, list(self.potentials) or [(0,)])
        self._derived = _Derived()

    def sampler(self) -> TreeSampler:
        """The calibrated NumPy sampler (built on first use, then kept)."""
        if self._derived.sampler is None:
            self._derived.sampler = TreeSampler.from_potentials(self.tree, self.potentials)
        return self._derived.sampler

    def gibbs(self) -> GibbsModel:
        """The calibrated torch model (exact marginals over any scope, on the driver and in tests):
        imports torch."""
        if self._derived.gibbs is None:
            from .graphical import GibbsModel, JunctionTree

            tree = JunctionTree(self.sizes, list(self.potentials) or [(0,)])
            self._derived.gibbs = GibbsModel(tree, self.potentials).calibrate()
        return self._derived.gibbs

    def fit_summary(self) -> dict:
        return dict(self._summary)

    @property
    def width(self) -> int:
        return self.tree.width

    def sample_codes(self, n_rows: int, rng: np.random.Generator) -> np.ndarray:
        if self.support is not None:  # LP mode: a sparse distribution over the model's codes
            codes = self.support[stratified_choice(self.weights, n_rows, rng)]
        else:
            codes = self.sampler().sample(n_rows, rng)
        for j, (grouping, fine, by_target) in self.refinements.items():
            given = None if by_target is None or self.target is None else (by_target, codes[:, self.target])
            codes[:, j] = _refine(codes[:, j], grouping, fine, rng, given)
        return codes

    def conditioned(self, evidence: Evidence) -> tuple["FptModel", float]:
        """The Gibbs distribution times the evidence's factors (:mod:`.conditioning`), sampled by the
        same exact sampler; the probability is the ratio of the two partition functions (LP mode: of
        the histogram's weights)."""
        potentials, refinements, weights = conditioned_parts(self, evidence)
        covered = all(self.tree.bag_containing(scope) is not None for scope in potentials)  # then the same tree
        model = FptModel(self.code_sizes, self.sizes, potentials, self.estimated_rows, refinements, self.support, weights,
                         self._summary, self.target, tree=self.tree if covered else None)
        if self.support is not None:
            return model, float(weights.sum() / self.weights.sum())
        return model, float(np.exp(model.sampler().log_partition - self.sampler().log_partition))

    def to_state(self) -> dict:
        state = {"code_sizes": list(self.code_sizes), "sizes": list(self.sizes), "estimated_rows": self.estimated_rows,
                 "potentials": [[list(s), t.tolist()] for s, t in self.potentials.items()],
                 "refinements": [[j, g.tolist(), p.tolist(), None if t is None else t.tolist()]
                                 for j, (g, p, t) in self.refinements.items()]}
        if self.target is not None:
            state["target"] = self.target
        if self._summary:
            state["summary"] = self._summary
        if self.support is not None:
            state["support"], state["weights"] = self.support.tolist(), self.weights.tolist()
        return state

    @classmethod
    def from_state(cls, state: dict, schema: Schema) -> "FptModel":
        if list(state["code_sizes"]) != [c.size for c in schema]:
            raise InternalError("saved fpt model does not match its schema's domain sizes")
        return cls(state["code_sizes"], state["sizes"], {tuple(s): t for s, t in state["potentials"]}, state["estimated_rows"],
                   {r[0]: r[1:] for r in state["refinements"]}, state.get("support"), state.get("weights"), state.get("summary"),
                   state.get("target"))


class _Derived:
    """What a model computes from its tables when first asked — the calibrated sampler, the torch
    model — kept for the process but never pickled: a Spark worker calibrates its own sampler, and
    unpickling a model must not import torch."""

    __slots__ = ("sampler", "gibbs")

    def __init__(self):
        self.sampler: TreeSampler | None = None
        self.gibbs: GibbsModel | None = None

    def __reduce__(self):
        return (_Derived, ())


def _table(table) -> np.ndarray:
    """A log-potential table as a float64 NumPy array of its own (a torch tensor from the fit is
    copied off its device; torch itself is not imported here)."""
    if hasattr(table, "detach"):
        table = table.detach().cpu().numpy()
    return np.array(table, dtype=np.float64)


def _refinement(grouping, fine, by_target=None) -> tuple:
    """(code → group map, 1-way distribution over the codes, (codes × target codes) weights or None)."""
    return (np.asarray(grouping, dtype=np.int64), np.asarray(fine, dtype=np.float64),
            None if by_target is None else np.asarray(by_target, dtype=np.float64))


def _refine(groups: np.ndarray, grouping: np.ndarray, fine: np.ndarray, rng: np.random.Generator, given=None) -> np.ndarray:
    """Fine codes for sampled groups: within each group, drawn ∝ ``fine`` restricted to it — times
    the factors at the row's target code with ``given`` = (codes × target codes factors, each row's
    target code); ∝ ``fine`` where that has no mass, uniform where neither has."""
    out = np.empty_like(groups)
    levels = 1 if given is None else given[0].shape[1]
    keys = groups * levels + (0 if given is None else given[1])
    uniforms = stratified_uniforms(len(keys), rng, keys)
    for key in np.unique(keys):
        rows = np.flatnonzero(keys == key)
        members = np.flatnonzero(grouping == key // levels)
        weights = fine[members] if given is None else fine[members] * given[0][members, key % levels]
        if not weights.sum() > 0:
            weights = fine[members]
        weights = weights if weights.sum() > 0 else np.ones(len(members))
        out[rows] = members[inverse_cdf(np.cumsum(weights), uniforms[rows])]
    return out
