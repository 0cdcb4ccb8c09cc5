"""SPLICE's options (a frozen, keyword-only dataclass validated at construction)."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ...errors import ParameterError
from ...queries import MAX_FRACTION_BITS
from ..one_way import OneWayConfig

#: The pair anchors' share of ρ when ``pair_share`` is null, less what the moments need to keep
#: MOMENT_SNR_KEEP × ``min_moment_snr`` (docs/splice.md, "Pair share and count").
PAIR_SHARE = 0.45
NUMERIC_MODELS = ("histogram", "gaussian")


@dataclass(frozen=True, kw_only=True)
class SpliceConfig(OneWayConfig):
    """SPLICE's options (defaults chosen by measurement: see docs/splice.md); the anchors' 1-way
    options (``one_way_*``, ``null_floor``) are :class:`~spark_synth.engines.one_way.OneWayConfig`'s."""

    engine_name = "splice"

    n_dense: int = 64
    n_sparse: int = 256
    degree: int = 12
    components: int = 64
    marginal_share: float = 0.5
    anchor_weight: float = 0.0
    learning_rate: float = 0.1
    steps: int = 400
    patience: int = 60
    direction_seed: int = 0
    fit_seed: int = 0
    rows_public: int | None = None
    device: str = "auto"
    cpu_threads: int = 1
    moment_fraction_bits: int | None = None  # None: derived from the moment query's public max_rows bound
    rake_sweeps: int = 50
    numeric_model: str = "gaussian"
    rank: int = 1
    max_null_share: float = 0.01
    quantile_encoding: float = 0.5
    min_moment_snr: float = 10.0
    pair_share: float | None = None  # None: PAIR_SHARE, less what the moments need (SpliceEngine.moment_and_pair_rho)
    pair_count: int | None = None  # None: 5·(columns − 1)
    pair_groups: int = 16
    pair_grouping: str = "sparse"
    pair_weight: float = 0.1
    spread_weight: float = 0.01
    max_component_codes: int = 128
    fits: int = 2

    def __post_init__(self) -> None:
        super().__post_init__()
        for name, low in (("n_dense", 0), ("n_sparse", 0), ("degree", 1), ("components", 1), ("steps", 1), ("patience", 1),
                          ("cpu_threads", 1), ("moment_fraction_bits", 8), ("rake_sweeps", 0), ("rank", 0), ("pair_groups", 2),
                          ("pair_count", 0), ("max_component_codes", 1), ("fits", 1)):
            value = getattr(self, name)
            if name in ("moment_fraction_bits", "pair_count") and value is None:
                continue
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ParameterError(f"splice.{name}", f"a whole number >= {low}", value)
        if self.n_dense + self.n_sparse < 1:
            raise ParameterError("splice.n_dense + splice.n_sparse", "at least 1 direction", self.n_dense + self.n_sparse)
        if self.moment_fraction_bits is not None and self.moment_fraction_bits > MAX_FRACTION_BITS:
            raise ParameterError("splice.moment_fraction_bits", f"a whole number in [8, {MAX_FRACTION_BITS}], or null (derived from a "
                                 "public bound of 10^12 rows)", self.moment_fraction_bits)
        if self.degree > 40:
            raise ParameterError("splice.degree", "at most 40 (power-basis moments lose precision beyond)", self.degree)
        if not 0 <= self.marginal_share < 1:
            raise ParameterError("splice.marginal_share", "a number in [0, 1)", self.marginal_share)
        if self.pair_share is None and self.marginal_share > 0 and PAIR_SHARE >= 1 - self.marginal_share:
            raise ParameterError("splice.marginal_share", f"below {1 - PAIR_SHARE:g} while splice.pair_share is "
                                 "null (the default pair share would leave nothing for the moments), or set splice.pair_share",
                                 self.marginal_share)
        for name in ("anchor_weight", "learning_rate", "pair_weight", "spread_weight"):
            value = getattr(self, name)
            if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0 or (name == "learning_rate" and value == 0):
                raise ParameterError(f"splice.{name}", "a finite number > 0" if name == "learning_rate" else "a finite number >= 0", value)
        if self.rows_public is not None and (isinstance(self.rows_public, bool) or not isinstance(self.rows_public, int) or self.rows_public < 1):
            raise ParameterError("splice.rows_public", "a whole number >= 1, or None (row count measured with DP)", self.rows_public)
        if self.device not in ("auto", "cpu", "cuda"):
            raise ParameterError("splice.device", "one of ['auto', 'cpu', 'cuda']", self.device)
        if not isinstance(self.quantile_encoding, (int, float)) or not 0 <= self.quantile_encoding <= 1:
            raise ParameterError("splice.quantile_encoding", "a number in [0, 1] (0: affine encoding of numeric columns)", self.quantile_encoding)
        if self.quantile_encoding > 0 and self.marginal_share == 0:
            raise ParameterError("splice.quantile_encoding", "0 when splice.marginal_share is 0 (the knots come from the DP 1-way histograms)",
                                 self.quantile_encoding)
        if self.pair_share is not None and (isinstance(self.pair_share, bool) or not isinstance(self.pair_share, (int, float))
                                            or not 0 <= self.pair_share < 1 - self.marginal_share):
            raise ParameterError("splice.pair_share", "a number in [0, 1 - splice.marginal_share) (the rest of ρ measures the moments), "
                                 "or null (chosen from the columns' types)", self.pair_share)
        if self.pair_share is not None and self.pair_share > 0 and self.marginal_share == 0:
            raise ParameterError("splice.pair_share", "0 when splice.marginal_share is 0 (the pair anchors follow the DP 1-way "
                                 "anchors, which decide the Gaussian block)", self.pair_share)
        if not isinstance(self.min_moment_snr, (int, float)) or not math.isfinite(self.min_moment_snr) or self.min_moment_snr < 0:
            raise ParameterError("splice.min_moment_snr", "a finite number >= 0 (0: always measure the moments)", self.min_moment_snr)
        if not isinstance(self.max_null_share, (int, float)) or not 0 <= self.max_null_share < 1:
            raise ParameterError("splice.max_null_share", "a number in [0, 1)", self.max_null_share)
        if self.pair_grouping not in ("width", "sparse"):
            raise ParameterError("splice.pair_grouping", "one of ['width', 'sparse']", self.pair_grouping)
        if self.numeric_model not in NUMERIC_MODELS:
            raise ParameterError("splice.numeric_model", f"one of {list(NUMERIC_MODELS)}", self.numeric_model)
