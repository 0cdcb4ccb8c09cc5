"""SPLICE engine: DP sliced Chebyshev moments (+ DP 1-way marginals as anchors) → Match in PyTorch.

SELECT  1-way histograms of every column (share ``marginal_share`` of ρ, in two stages:
        :mod:`..one_way`), the sliced Chebyshev moment sums over ``n_dense`` dense + ``n_sparse``
        pairwise random directions, degrees 1..``degree`` (the rest of ρ), in one Spark pass each,
        and pair anchors (share ``pair_share``, :mod:`.pairs`): grouped 2-way tables that a first
        Match on the moments misses most, chosen by the exponential mechanism.
        If the DP row count is below ``min_moment_snr`` times the moments' noise σ, no moments: the
        rest of ρ goes to the histograms and the model is their product. With ``quantile_encoding`` > 0 the
        moment query is adaptive: numeric columns are encoded through knots built from the released
        DP histograms (a mix of their CDF and the affine map), so the moments resolve where the data
        lie; a post-processing choice of the next query (adaptive zCDP composition).
MEASURE exact on Spark; noise once on the driver (discrete Gaussian; the moment vector's ℓ2
        sensitivity is √(L·H_k), see :class:`~spark_synth.queries.MomentQuery`).
FIT     a mixture of ``components`` product distributions, by Adam (cosine schedule) on
        (1/L) Σ_l Σ_j (m̃_jl − m_j(w_l, q))² / j²  +  ``anchor_weight`` · Σ_c ‖p̃_c − q_c‖²
        + the pair anchors' weighted squared misfit (:class:`.pairs.PairMisfit`)
        + ``spread_weight`` × the columns' spread across components (:class:`.pairs.ComponentSpread`),
        where m̃ = noisy sums / noisy row count and p̃_c the DP 1-way marginals. Each component is a
        product of per-column distributions over public codes (``numeric_model="histogram"``), or of
        those for categorical/nullable columns and one Gaussian N(μ, UUᵀ + diag(D)) of rank ``rank``
        over the non-nullable numeric columns (``numeric_model="gaussian"``). The final Match runs
        ``fits`` times from different seeds and the mixtures are pooled (:func:`.pooling.pool_fits`).
"""

from __future__ import annotations

import math
from concurrent.futures import ThreadPoolExecutor
from typing import Sequence

import numpy as np

from ...errors import InternalError, ParameterError
from ...logs import layer
from ...privacy import NoisyMeasurement, gaussian_sigma, rho_difference, split_rho
from ...queries import MarginalQuery, MomentQuery
from ...schema import Schema
from ...schema.embedding import Embedding
from ..base import Engine, MeasurementOracle
from ..groupings import cells, coarse_groupings, merge_sparse_groups
from ..one_way import (measure_stage_one, measure_stage_two, one_way_distributions, one_way_queries, one_way_releases,
                       stage_budgets)
from ..postprocess import estimate_total
from .column_models import encoding_knots, gaussian_columns, shared_columns
from .config import NUMERIC_MODELS, PAIR_SHARE, SpliceConfig  # noqa: F401 (NUMERIC_MODELS re-exported)
from .directions import make_directions
from .gaussian import GaussianBlock
from .match import match, match_terms, null_share
from .model import SpliceModel
from .pairs import (PAIR_MAX_CELLS, PAIR_SELECT_SHARE, anchors_line, candidate_pairs, model_tables, pair_query,
                    pair_targets)
from .pooling import fit_seed, parallel_fits, pool_fits, rake_to_marginals

_log = layer("engines")

MOMENTS = "sliced-chebyshev-moments"
#: What the moments keep when ``pair_share`` is null: MOMENT_SNR_KEEP × ``min_moment_snr`` (see ``PAIR_SHARE``).
MOMENT_SNR_KEEP = 1.5
#: Pair anchors per column when ``pair_count`` is null: PAIR_ROUNDS_PER_COLUMN · (columns − 1).
PAIR_ROUNDS_PER_COLUMN = 5
#: A pair table's group holding fewer DP rows than this many times a pair cell's noise σ is merged away (as MST's 3σ).
SPARSE_SIGMAS = 3.0


class SpliceEngine(Engine):
    """Sliced Chebyshev moment matching (SPLICE) with 1-way marginal anchors."""

    name = "splice"
    requires = (("torch", "torch"),)
    model_class = SpliceModel
    config_class = SpliceConfig

    # ---- SELECT + MEASURE ----------------------------------------------------------------
    def planned_queries(self, schema: Schema) -> list:
        """The full 1-way histograms (the moment query is built per call and cached by identity, so
        it keeps its own scan when another caller prepared these)."""
        return one_way_queries(schema) if self.options.marginal_share > 0 else []

    def measure(self, schema: Schema, oracle: MeasurementOracle) -> list[NoisyMeasurement]:
        """1-way histograms (share ``marginal_share`` of ρ, :mod:`..one_way`) and the moment query (the
        rest). With ``quantile_encoding`` > 0 the moment query's numeric encoding is built from the
        released histograms first (post-processing), so it is measured in a second scan.

        When the DP row count from the histograms' first stage is below ``min_moment_snr`` times the
        moment sums' noise σ, the moments would be noise: the rest of ρ goes to the histograms instead
        and the model is their product (as ``independent``). A decision from DP releases only."""
        o = self.options
        plain = self.moment_query(schema, None)
        if o.marginal_share == 0:
            return [oracle.measure(plain, oracle.rho_remaining)]
        rho_marginals, rho_rest = split_rho(oracle.rho_remaining, [o.marginal_share, 1.0 - o.marginal_share])
        rho_pairs = rho_rest * self.pair_share_for(schema) / (1.0 - o.marginal_share) if self.pair_rounds(schema) > 0 else 0.0
        adaptive = o.quantile_encoding > 0 and any(not c.type.is_discrete for c in schema)
        if not adaptive:
            oracle.prepare([*self.planned_queries(schema), plain])  # both in one scan
        first, second = stage_budgets(split_rho(rho_marginals, [1.0] * len(schema)), o.one_way_fine_share)
        stage_one = measure_stage_one(schema, oracle, first)
        rows = estimate_total(stage_one)  # DP
        k = oracle.rows_per_unit  # noise is k × a query's one-row sensitivity under a privacy unit
        rho_moments, rho_pairs = self.moment_and_pair_rho(plain, rho_rest, rho_pairs, rows, k)
        if rows < o.min_moment_snr * gaussian_sigma(k * plain.l2_sensitivity, rho_moments):
            _log.info("splice: too few rows (DP estimate) for the moments to rise above their noise; "
                      "the rest of the budget goes to the 1-way histograms")
            rest = split_rho(oracle.rho_remaining, [1.0] * len(schema))
            return [*stage_one, *measure_stage_two(schema, oracle, stage_one, rest, o)]
        released = [*stage_one, *measure_stage_two(schema, oracle, stage_one, second, o)]
        moments = self.moment_query(schema, released) if adaptive else plain
        # a pair cell's noise at the planned rounds (at least the rounds run: σ no smaller than theirs)
        cell_sigma = gaussian_sigma(k, pair_round_rho(rho_pairs, self.pair_rounds(schema))[1]) if rho_pairs > 0 else None
        candidates = self.pair_candidates(schema, released, cell_sigma) if rho_pairs > 0 else []
        if not candidates:  # no pair to measure: the moments take the pairs' share too
            rho_moments, rho_pairs = oracle.rho_remaining, 0.0
        else:
            oracle.prepare([moments, *candidates])  # one scan answers the moments and every candidate
        released.append(oracle.measure(moments, rho_moments))
        if candidates:
            released.extend(self.measure_pairs(schema, oracle, released, candidates, rho_pairs))
        return released

    def pair_candidates(self, schema: Schema, released: Sequence[NoisyMeasurement], cell_sigma: float | None = None) -> list[MarginalQuery]:
        """Candidate pair anchors with at most ``PAIR_MAX_CELLS`` cells each, over public groupings
        (``pair_groups`` ranges) from which, with ``pair_grouping="sparse"`` and a pair cell's noise
        ``cell_sigma``, the groups holding fewer than ``SPARSE_SIGMAS`` × ``cell_sigma`` DP rows are
        merged away (:func:`~..groupings.merge_sparse_groups`); a column left with one value group
        gets no pair. The Gaussian block's columns and the merges are decided from the DP 1-way
        releases in ``released`` (post-processing)."""
        o = self.options
        rows, anchors = self._anchors(schema, released)
        groupings = coarse_groupings(schema, o.pair_groups)
        if o.pair_grouping == "sparse" and cell_sigma is not None and rows > 0:  # DP releases only: post-processing
            groupings = merge_sparse_groups(schema, groupings, anchors, SPARSE_SIGMAS * cell_sigma / rows)
        gaussian = gaussian_columns(schema, o.numeric_model, anchors, o.max_null_share)
        shared = shared_columns(schema, gaussian, o.max_component_codes)  # independent in the model: no pair fits
        flat = {j for j, (c, g) in enumerate(zip(schema, groupings))  # every value in one group: the table is a 1-way one
                if g is not None and len(set(g[: c.n_values])) < 2}
        return [pair_query(schema, pair, groupings) for pair in candidate_pairs(schema, gaussian, o.rank)
                if cells(schema, pair, groupings) <= PAIR_MAX_CELLS and not shared.intersection(pair) and not flat.intersection(pair)]

    def measure_pairs(self, schema: Schema, oracle: MeasurementOracle, released: list[NoisyMeasurement],
                      candidates: list[MarginalQuery], rho: float) -> list[NoisyMeasurement]:
        """The pair anchors (:mod:`.pairs`): a first Match on ``released`` (post-processing); then, in
        ``pair_count`` rounds of ``rho`` / rounds each, the exponential mechanism picks the candidate whose
        2-way table the first model misses most (share ``PAIR_SELECT_SHARE`` of the round; each score
        less the table's expected noise, as AIM's), and the chosen tables are measured with the rest."""
        o = self.options
        rounds = min(len(candidates), self.pair_rounds(schema))
        if rounds == 0:
            return []
        first = self.fit_measurements(schema, released, fits=1)  # scores only: one fit is enough
        queries = list(candidates)
        answers = model_tables(first, queries, schema, first.estimated_rows, np.random.default_rng(o.fit_seed))
        select_rho, measure_rho = pair_round_rho(rho, rounds)
        expected_noise = [math.sqrt(2 / math.pi) * gaussian_sigma(oracle.rows_per_unit, measure_rho) * a.size for a in answers]
        chosen = []
        for _ in range(rounds):
            i = queries.index(oracle.select(queries, "weighted_l1", answers, select_rho, offsets=expected_noise))
            chosen.append(queries.pop(i))
            del answers[i], expected_noise[i]
        _log.info("%s", anchors_line([q.name for q in chosen]))
        _log.debug("splice: pair anchors, all: %s", ", ".join(q.name for q in chosen))
        return oracle.measure_many([(q, measure_rho) for q in chosen])

    def pair_share_for(self, schema: Schema) -> float:
        """The pair anchors' planned share of ρ: ``pair_share``, or when null ``PAIR_SHARE`` (less what
        the moments need: :meth:`moment_and_pair_rho`); 0 without 1-way anchors."""
        o = self.options
        if o.pair_share is not None:
            return float(o.pair_share)
        return 0.0 if o.marginal_share == 0 else PAIR_SHARE

    def moment_and_pair_rho(self, moments: MomentQuery, rho_rest: float, rho_pairs: float, rows: float,
                            rows_per_unit: int = 1) -> tuple[float, float]:
        """(ρ of the moments, ρ of the pairs) out of ``rho_rest``. With ``pair_share`` null the pairs give
        the moments back what keeps the DP row count ``rows`` (a release: post-processing) at
        ``MOMENT_SNR_KEEP`` × ``min_moment_snr`` times the moment sums' noise σ, where the planned
        split would leave them less (few rows: mushroom's 6,500 keep 0.18 of ρ instead of 0.05)."""
        o = self.options
        if o.pair_share is None and rho_pairs > 0 and rows > 0:
            need = 0.5 * (MOMENT_SNR_KEEP * o.min_moment_snr * rows_per_unit * moments.l2_sensitivity / rows) ** 2  # σ = Δ/√(2ρ)
            rho_pairs = max(0.0, min(rho_pairs, rho_rest - need))
        return rho_difference(rho_rest, rho_pairs), rho_pairs

    def pair_rounds(self, schema: Schema) -> int:
        """How many pair anchors to measure at most (public: options and column count); 0 spends no ρ on pairs."""
        o = self.options
        if self.pair_share_for(schema) == 0:
            return 0
        return o.pair_count if o.pair_count is not None else PAIR_ROUNDS_PER_COLUMN * (len(schema) - 1)

    def moment_query(self, schema: Schema, released: Sequence[NoisyMeasurement] | None) -> MomentQuery:
        """The moment query; numeric columns encoded through knots from the DP 1-way histograms in
        ``released`` when there are any (``quantile_encoding`` > 0)."""
        o = self.options
        directions, _ = make_directions(schema, o.n_dense, o.n_sparse, o.direction_seed)
        knots = None
        if released:
            _, anchors = self._anchors(schema, released)
            knots = encoding_knots(schema, anchors, o.quantile_encoding) or None
        return MomentQuery(name=MOMENTS, directions=directions, degree=o.degree, fraction_bits=o.moment_fraction_bits,
                           value_knots=knots)

    def _anchors(self, schema: Schema, measurements: Sequence[NoisyMeasurement]):
        """(row count, DP 1-way distributions per column or None), post-processed from the releases."""
        o = self.options
        releases = one_way_releases(measurements)
        have_marginals = {(c.name,) for c in schema} <= {m.columns for m in releases}
        if o.rows_public is not None:
            rows = float(o.rows_public)
        elif have_marginals:
            rows = estimate_total(releases)
        else:
            raise ParameterError("splice.marginal_share", "> 0 unless splice.rows_public is declared (n is private)", 0)
        return rows, (one_way_distributions(schema, releases, rows, o.null_floor) if have_marginals else None)

    # ---- FIT ---------------------------------------------------------------------------
    def fit_measurements(self, schema: Schema, measurements: Sequence[NoisyMeasurement], *, fits: int | None = None) -> SpliceModel:
        """Match a mixture to the noisy measurements (post-processing): ``fits`` (default the option)
        Matches from different seeds, pooled into one mixture (:func:`pool_fits`), then raked."""
        o = self.options
        fits = o.fits if fits is None else fits
        by_name = {m.name: m for m in measurements}
        rows, anchors = self._anchors(schema, measurements)
        if MOMENTS not in by_name:
            if anchors is None:
                raise InternalError("splice got neither a moment measurement nor every column's 1-way histogram")
            return SpliceModel(np.ones(1), [a[None, :] for a in anchors], estimated_rows=rows)  # too few rows: the product
        embedding = Embedding(schema, encoding_knots(schema, anchors, o.quantile_encoding))  # as in moment_query()
        degree = o.degree
        target = by_name[MOMENTS].values * np.sqrt(np.arange(1, degree + 1)) / rows  # noisy m̃[l, j]
        directions, supports = make_directions(schema, o.n_dense, o.n_sparse, o.direction_seed)
        numeric = gaussian_columns(schema, o.numeric_model, anchors, o.max_null_share)
        shared = shared_columns(schema, numeric, o.max_component_codes)
        import torch

        threads = torch.get_num_threads()
        torch.set_num_threads(o.cpu_threads)  # small tensors: one thread beats two on a busy machine
        try:
            terms = match_terms(schema, embedding, directions, supports, anchors, numeric, shared, o,
                                pair_targets(schema, measurements, rows), float(by_name[MOMENTS].sigma) / rows)

            def one_fit(i: int):
                return match(schema, embedding, target, anchors, numeric, shared, o, terms, seed=fit_seed(o.fit_seed, i),
                              label=f"splice Match, fit {i + 1}/{fits}" if fits > 1 else "splice Match")

            with ThreadPoolExecutor(max_workers=parallel_fits(fits, o.cpu_threads)) as pool:
                results = list(pool.map(one_fit, range(fits)))
        finally:
            torch.set_num_threads(threads)
        code_columns = [j for j in range(len(schema)) if j not in numeric]
        weights, probabilities, gaussian = pool_fits([r[:3] for r in results], [j in shared for j in code_columns])
        if anchors is not None and o.rake_sweeps > 0:
            weights, probabilities = rake_to_marginals(weights, probabilities, [anchors[j] for j in code_columns], o.rake_sweeps)
        block = None
        if numeric:
            values = [schema.columns[j].n_values for j in numeric]
            calibration = (tuple(anchors[j][:v] for j, v in zip(numeric, values))
                           if anchors is not None and o.rake_sweeps > 0 else None)
            nulls = tuple(null_share(anchors[j], schema.columns[j]) if anchors is not None else 0.0 for j in numeric)
            block = GaussianBlock(columns=numeric, mean=gaussian[0], factor=gaussian[1], diag=gaussian[2],
                                  edges=tuple(embedding.value_edges(j) for j in numeric), calibration=calibration,
                                  null_share=nulls)
        model = SpliceModel(weights, probabilities, estimated_rows=rows, gaussian=block)
        return model.record_loss_curves({"match_loss" if i == 0 else f"match_loss_{i + 1}": r[3] for i, r in enumerate(results)})


def pair_round_rho(rho: float, rounds: int) -> tuple[float, float]:
    """(selection ρ, measurement ρ) of one of ``rounds`` pair rounds sharing ``rho`` (public); the
    rounds together never ask more than ``rho`` (ρ / rounds can round up: a CI run's 70 pair
    measurements asked 0.021228943590336568 with 0.021228943590336564 left)."""
    per_round = split_rho(rho, [1.0] * max(1, rounds))[0]  # equal shares whose exact sum is within rho
    return tuple(split_rho(per_round, [PAIR_SELECT_SHARE, 1.0 - PAIR_SELECT_SHARE]))
