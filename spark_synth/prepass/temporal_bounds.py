"""The DP [min, max] of a date / timestamp column: two DP quantiles on a public calendar grid."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass

import numpy as np

from ..privacy import PrivacyFilter
from ..privacy.mechanisms import select_index
from ..schema.draft import DATE, TEMPORAL

#: Quantiles the bounds estimate: values outside them are clipped by runs using the schema.
LOWER_QUANTILE, UPPER_QUANTILE = 0.01, 0.99

#: The public calendar range of date and timestamp candidates.
FIRST_DAY, LAST_DAY = dt.date(1900, 1, 1), dt.date(2100, 12, 31)
_EPOCH_DAY = dt.date(1970, 1, 1)
#: Public candidate dates: every day from FIRST_DAY to LAST_DAY, as days since 1970-01-01 (73,414).
DATE_GRID = np.arange((FIRST_DAY - _EPOCH_DAY).days, (LAST_DAY - _EPOCH_DAY).days + 1, dtype=np.float64)
#: Seconds between timestamp candidates: one hour.
TIME_STEP = 3600
#: Public candidate timestamps: every whole hour from FIRST_DAY 00:00 to the day after LAST_DAY
#: 00:00, as seconds since 1970-01-01 00:00 (UTC for a timestamp, the wall clock for a
#: timestamp_ntz; 1,761,937 candidates). Uniform, not log-spaced like :data:`GRID`: a timestamp
#: sits at an arbitrary offset from the 1970 epoch, so relative resolution means nothing (near 2020
#: the numeric grid steps by years, near 1970 by seconds); a uniform grid resolves every year of the
#: range alike. Hourly, because the exponential mechanism's error grows with log(#candidates) and
#: its run time with #candidates (seconds here), while an hour is fine next to the span of a table
#: whose timestamps are worth 64 bins. Values beyond the range are clipped to its ends by later runs.
TIME_GRID = np.arange((FIRST_DAY - _EPOCH_DAY).days * 86400, (LAST_DAY - _EPOCH_DAY).days * 86400 + 86400 + 1,
                      TIME_STEP, dtype=np.float64)
_TEMPORAL_GRIDS = {DATE: DATE_GRID, **{kind: TIME_GRID for kind in TEMPORAL if kind != DATE}}


@dataclass(frozen=True)
class _Counts:
    """A column's counts on a grid (the shape :func:`_bounds` reads): cells and ties."""

    grid: np.ndarray
    ties: np.ndarray


def _bounds(privacy_filter: PrivacyFilter, name: str, profile, rho: float, grid: np.ndarray,
            candidates: np.ndarray) -> tuple[float, float]:
    """[min, max] of a date / timestamp column: the edges of two intervals between consecutive public
    candidates (``grid`` at the indexes ``candidates``) holding the lower / upper quantile, each
    chosen by the exponential mechanism at half of ``rho``; ``profile`` counted on ``grid``."""
    at_most = np.cumsum(profile.grid)[candidates]  # #{x <= c} for each candidate c
    below = at_most - profile.ties[candidates]  # #{x < c}
    n = float(profile.grid.sum())
    low_end, high_end = below[:-1], at_most[1:]  # interval i: [candidates[i], candidates[i + 1]]
    picks = []
    for q, label in ((LOWER_QUANTILE, "lower"), (UPPER_QUANTILE, "upper")):
        scores = -np.maximum(np.maximum(low_end - q * n, q * n - high_end), 0.0)
        picks.append(select_index(privacy_filter, scores, 1.0, rho / 2.0, name=f"{name}: {label} bound",
                                  description=f"{q:g}-quantile of {name}: one of {scores.size} intervals between public "
                                              f"candidates (score -dist(q n, [#{{x < lo}}, #{{x <= hi}}]), sensitivity 1)"))
    low, high = min(picks), max(picks) + 1  # lower edge of the lower interval, upper edge of the upper one
    values = grid[candidates[[low, high]]]
    return float(values[0]), float(values[1])
