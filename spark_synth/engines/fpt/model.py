"""The fitted FPT models, sampled exactly (post-processing): a Gibbs distribution on a junction tree
(:class:`FptModel`, the PMW fit) or a sparse histogram (:class:`FptLpModel`, the LP fit), each then
refined from model codes to the schema's codes.

Sampling needs NumPy only (:mod:`.draws`): this module does not import torch, so a Spark worker
that unpickles a model and draws rows never loads it. :meth:`FptModel.gibbs` (the driver's and the
tests' exact marginals across bags) imports torch when called.
"""

from __future__ import annotations

from abc import abstractmethod
from typing import TYPE_CHECKING

import numpy as np

from ...errors import InternalError
from ...schema import Schema
from ..base import FittedModel
from ..stratified import inverse_cdf, stratified_choice, stratified_uniforms
from ..evidence import Evidence
from .conditioning import evidence_factors, row_factor, with_log_factors
from .draws import TreeSampler, TreeStructure

if TYPE_CHECKING:
    from .graphical import GibbsModel


class _RefinedModel(FittedModel):
    """What both FPT models share: a distribution over the columns' *model* codes (a coarsened column's
    group), the DP row estimate, and per coarsened column its public grouping, the DP 1-way
    distribution over its fine codes and, when the target's table with the column was measured,
    factors r(code, t) ≈ P(t | code) / P(t | group): a sampled group becomes a fine code drawn within
    the group ∝ P(code)·r(code, t) at the row's target code t (∝ P(code) without them)."""

    engine = "fpt"

    def __init__(self, code_sizes, sizes, estimated_rows: float, refinements: dict | None, summary: dict | None,
                 target: int | None):
        self.code_sizes = tuple(int(s) for s in code_sizes)
        self.sizes = tuple(int(s) for s in sizes)
        self.refinements = {int(j): _refinement(*r) for j, r in (refinements or {}).items()}
        self.target = None if target is None else int(target)
        self.estimated_rows = float(estimated_rows)
        self._summary = dict(summary or {})  # public facts of the fit: width, rounds, selected query names

    @abstractmethod
    def model_codes(self, n_rows: int, rng: np.random.Generator) -> np.ndarray:
        """(n_rows, d) draws of the model codes (before refinement)."""

    def fit_summary(self) -> dict:
        return dict(self._summary)

    def sample_codes(self, n_rows: int, rng: np.random.Generator) -> np.ndarray:
        codes = self.model_codes(n_rows, rng)
        # refinements follow the target's model code (a regression target's range, before its own refinement)
        target = None if self.target is None else codes[:, self.target].copy()
        for j, (grouping, fine, by_target) in self.refinements.items():
            given = None if by_target is None or target is None else (by_target, target)
            codes[:, j] = _refine(codes[:, j], grouping, fine, rng, given)
        return codes

    def to_state(self) -> dict:
        state = {"code_sizes": list(self.code_sizes), "sizes": list(self.sizes), "estimated_rows": self.estimated_rows,
                 "potentials": [[list(s), t.tolist()] for s, t in getattr(self, "potentials", {}).items()],
                 "refinements": [[j, g.tolist(), p.tolist(), None if t is None else t.tolist()]
                                 for j, (g, p, t) in self.refinements.items()]}
        if self.target is not None:
            state["target"] = self.target
        if self._summary:
            state["summary"] = self._summary
        return state

    @classmethod
    def from_state(cls, state: dict, schema: Schema) -> "_RefinedModel":
        """The saved model: a Gibbs model, or an LP histogram when the state has a ``support``."""
        if list(state["code_sizes"]) != [c.size for c in schema]:
            raise InternalError("saved fpt model does not match its schema's domain sizes")
        shared = dict(refinements={r[0]: r[1:] for r in state["refinements"]}, summary=state.get("summary"),
                      target=state.get("target"))
        if state.get("support") is not None:
            return FptLpModel(state["code_sizes"], state["sizes"], state["support"], state["weights"], state["estimated_rows"],
                              **shared)
        return FptModel(state["code_sizes"], state["sizes"], {tuple(s): t for s, t in state["potentials"]},
                        state["estimated_rows"], **shared)


class FptModel(_RefinedModel):
    """The PMW fit: log-potential tables over clique scopes of the model codes — a Gibbs distribution
    on their junction tree, sampled exactly (:mod:`.draws`) — then refined. ``from_state`` also reads
    an LP model (:class:`FptLpModel`), so the engine's one model class loads either."""

    def __init__(self, code_sizes, sizes, potentials: dict, estimated_rows: float, refinements: dict | None = None,
                 summary: dict | None = None, target: int | None = None, tree: TreeStructure | None = None):
        super().__init__(code_sizes, sizes, estimated_rows, refinements, summary, target)
        self.potentials = {tuple(int(v) for v in s): _table(t) for s, t in potentials.items()}
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

    @property
    def width(self) -> int:
        return self.tree.width

    def model_codes(self, n_rows: int, rng: np.random.Generator) -> np.ndarray:
        return self.sampler().sample(n_rows, rng)

    def conditioned(self, evidence: Evidence) -> tuple["FptModel", float]:
        """The Gibbs distribution times the evidence's factors as extra log-potentials (:mod:`.conditioning`),
        sampled by the same exact sampler; the probability is the ratio of the two partition functions."""
        factors, refinements = evidence_factors(self, evidence)
        potentials = with_log_factors(self.potentials, factors)
        covered = all(self.tree.bag_containing(scope) is not None for scope in potentials)  # then the same tree
        model = FptModel(self.code_sizes, self.sizes, potentials, self.estimated_rows, refinements, self._summary,
                         self.target, tree=self.tree if covered else None)
        return model, float(np.exp(model.sampler().log_partition - self.sampler().log_partition))


class FptLpModel(_RefinedModel):
    """The LP fit (``mode="lp"``): a sparse histogram over the model codes (``support`` rows with
    ``weights``), sampled with stratified draws, then refined."""

    def __init__(self, code_sizes, sizes, support, weights, estimated_rows: float, refinements: dict | None = None,
                 summary: dict | None = None, target: int | None = None):
        super().__init__(code_sizes, sizes, estimated_rows, refinements, summary, target)
        self.support = np.asarray(support, dtype=np.int64)
        self.weights = np.asarray(weights, dtype=np.float64)

    def model_codes(self, n_rows: int, rng: np.random.Generator) -> np.ndarray:
        return self.support[stratified_choice(self.weights, n_rows, rng)]

    def conditioned(self, evidence: Evidence) -> tuple["FptLpModel", float]:
        """The histogram's rows reweighted by the evidence's factors; the probability is the weights' ratio."""
        factors, refinements = evidence_factors(self, evidence)
        weights = self.weights * row_factor(self.support, factors)
        model = FptLpModel(self.code_sizes, self.sizes, self.support, weights, self.estimated_rows, refinements,
                           self._summary, self.target)
        return model, float(weights.sum() / self.weights.sum())

    def to_state(self) -> dict:
        return {**super().to_state(), "support": self.support.tolist(), "weights": self.weights.tolist()}


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
