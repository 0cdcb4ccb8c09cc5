"""The DP [min, max] of a numeric column: a coarse-to-fine noisy histogram over the public ranges
(:mod:`.number_ranges`), and the warnings about the drafted bounds."""

from __future__ import annotations

import math

import numpy as np

from ..privacy import PrivacyFilter, split_rho
from ..privacy.mechanisms import release_counts
from ..privacy.noise import calibrated_measurement
from ..privacy.thresholding import threshold_for
from .number_ranges import K_MAX, OCTAVES, Range, _RangeCounts

#: Numeric bounds (see :func:`_numeric_bounds`): the share of a column's ρ the coarse octave
#: histogram gets (the fine stage the rest); the chance that an empty range passes the threshold,
#: over all of a column's ranges (a bound orders of magnitude off is the failure this pre-pass
#: exists to avoid, so it is a one-in-a-million event per column); the share of rows the fine
#: stage may clip at each end, and the number of σ its confidence bound adds; how many unseen
#: ranges between an end range and the rest of the column's seen ranges make a warning.
_COARSE_SHARE = 2.0 / 3.0
SPURIOUS_RANGE = 1e-6
CLIP_SHARE, FINE_Z = 0.01, 2.0
GAP_RANGES = 3
#: An unseen range just outside a bound with a noisy count of NEAR_Z·σ or more is named in a warning.
NEAR_Z = 3.0


def _noisy_counts(privacy_filter: PrivacyFilter, counts, rho: float, *, name: str, description: str):
    """:func:`release_counts` (ℓ2 sensitivity 1 per row, K per unit; charged), and the σ of its noise (the
    same calibration)."""
    sigma = calibrated_measurement(rho, privacy_filter.unit.max_rows, integer=True)[1]
    return release_counts(privacy_filter, np.asarray(counts, dtype=np.int64), rho, name=name,
                          description=description), sigma


def _numeric_bounds(privacy_filter: PrivacyFilter, name: str, profile, rho: float,
                    integer: bool) -> tuple[float | None, float | None, str, list[str]]:
    """[min, max] of a numeric column from a noisy histogram over sign and octave, then its eighths.

    COARSE (``_COARSE_SHARE`` of ``rho``): discrete-Gaussian counts of :data:`OCTAVES` (only the
    ranges holding a whole number for ``integer``); one row is in one range, so ℓ2 sensitivity 1.
    A range is *seen* when its noisy count reaches τ, the smallest threshold that an empty range's
    noise reaches with probability ≤ SPURIOUS_RANGE / #ranges; the bounds are the least value of
    the lowest seen range and the greatest of the highest (whole values for ``integer``). None seen:
    (None, None) — the bounds stay TODO.
    FINE (the rest of ``rho``), only where it can help: the eighths of the two end octaves
    (counted once if they are one; sensitivity 1 again) get noisy counts, and each end moves
    inwards past the outermost eighths as long as an upper confidence bound on the rows they hold
    (noisy sum + FINE_Z·σ·√m) stays within CLIP_SHARE of the noisy row count. Skipped — nothing
    spent — when even one empty eighth could not pass that test (small tables, large σ).
    Everything after the noisy counts is post-processing. Returns ``(min, max, note, warnings)``."""
    counts = _RangeCounts(profile)
    ranges = [r for r in OCTAVES if not integer or r.holds_integer()]
    coarse_rho, fine_rho = split_rho(rho, [_COARSE_SHARE, 1.0 - _COARSE_SHARE])
    noisy, sigma = _noisy_counts(privacy_filter, [counts(r) for r in ranges], coarse_rho,
                                 name=f"{name}: octave histogram",
                                 description=f"counts of {name}'s numbers in {len(ranges)} public ranges by sign and "
                                             f"power of two (one range per row, sensitivity 1)")
    tau = threshold_for(sigma, SPURIOUS_RANGE / len(ranges))
    seen = np.flatnonzero(noisy >= tau)
    if seen.size == 0:
        return None, None, "no DP bounds: no range of values passed the noise threshold", [
            f"column '{name}': no range of its values stood out from the DP noise (too few rows for this epsilon, "
            f"each range needs about {tau} rows); 'min' and 'max' are left TODO — fill them in by hand from public "
            f"knowledge, or draft again with a larger --dp-bounds"]
    first, last = int(seen[0]), int(seen[-1])
    low, high = ranges[first].low(integer), ranges[last].high(integer)
    how = f"DP bounds (noisy octave histogram, threshold {tau}"
    clip = CLIP_SHARE * max(float(noisy.sum()), 0.0)  # rows each end may clip: 1% of the noisy row count
    fine_sigma = calibrated_measurement(fine_rho, 1, integer=True)[1]
    parts = {}  # the end octaves worth refining (by index into ranges), and their parts
    for index in dict.fromkeys((first, last)):
        kept = [p for p in ranges[index].parts() if not integer or p.holds_integer()] if ranges[index].octave else []
        if len(kept) >= 2 and FINE_Z * fine_sigma <= clip:  # else even one empty part could never be clipped
            parts[index] = kept
    if parts:
        measured = [p for kept in parts.values() for p in kept]
        fine, _ = _noisy_counts(privacy_filter, [counts(p) for p in measured], fine_rho, name=f"{name}: octave eighths",
                                description=f"counts of {name}'s numbers in the eighths of its end octave(s) "
                                            f"(one range per row, sensitivity 1)")
        split = np.cumsum([len(kept) for kept in parts.values()])[:-1]
        noisy_parts = dict(zip(parts, np.split(fine, split)))
        top = _clipped(noisy_parts[last][::-1], fine_sigma, clip) if last in parts else 0  # from the top down
        if last in parts:
            high = parts[last][::-1][top].high(integer)
        if first in parts:  # from the bottom up; within one octave, at least one part is kept
            bottom = _clipped(noisy_parts[first], fine_sigma, clip)
            low = parts[first][min(bottom, len(parts[first]) - 1 - top) if first == last else bottom].low(integer)
        how += ", then eighths of the end octave" + ("s" if len(parts) > 1 else "")
    how += ")"
    widened = low == high  # one value seen (a constant column): a schema needs min < max
    if widened:
        high = low + 1 if low + 1 != low else math.nextafter(low, math.inf)  # (a whole number past 2^53 too)
    warnings = _flags(name, ranges, noisy, sigma, tau, low, high, integer, widened)
    if widened:
        warnings.append(f"column '{name}': only the value {_number(low)} stood out from the DP noise; 'max' was set "
                        f"to {_number(high)} — edit the bounds by hand if the column holds other values")
    if integer and (low, high) == (0, 1):
        how += "; a 0/1 column"
    return low, high, how, warnings


def _clipped(outer_first: np.ndarray, sigma: float, clip: float) -> int:
    """How many of an end octave's parts (noisy counts, the outermost first) to clip: the most m
    such that, for every j ≤ m, the first j parts' noisy sum plus FINE_Z·σ·√j is at most ``clip``
    — never all of them (the octave stood out)."""
    j = np.arange(1, outer_first.size + 1)
    fits = np.cumsum(outer_first) + FINE_Z * sigma * np.sqrt(j) <= clip
    m = outer_first.size if fits.all() else int(np.argmin(fits))
    return min(m, outer_first.size - 1)


def _flags(name: str, ranges: list[Range], noisy: np.ndarray, sigma: float, tau: int, low: float, high: float,
           integer: bool, widened: bool = False) -> list[str]:
    """Warnings about the drafted bounds, from the coarse noisy counts (post-processing): an end range
    beyond ±2^K_MAX; an end range GAP_RANGES or more unseen ranges away from the column's other
    seen ranges (a bound reaching orders of magnitude past the other values: a few extreme values,
    or a one-in-a-million noise spike); and an unseen range just outside a bound whose noisy count
    is still NEAR_Z·σ or more (values the bound clips that are likely real; not above a ``widened``
    max, which its own warning names)."""
    out = []
    seen = np.flatnonzero(noisy >= tau)
    zero = next(i for i, r in enumerate(ranges) if r.side == 0)
    nonzero = [int(i) for i in seen if i != zero]
    for end, edge, inner, outer, bound in (("min", int(seen[0]), seen[1:2], int(seen[0]) - 1, low),
                                            ("max", int(seen[-1]), seen[-2:-1], int(seen[-1]) + 1, high)):
        if math.isinf(ranges[edge].lo) or math.isinf(ranges[edge].hi):
            out.append(f"column '{name}': values beyond ±{_number(2.0**K_MAX)} stood out from the DP noise; '{end}' was "
                       f"clipped to {_number(bound)} — edit it by hand (or --exclude the column)")
            continue
        if edge != zero and any(i != edge for i in nonzero) and inner.size:
            gap = abs(edge - int(inner[0])) - 1
            if gap >= GAP_RANGES:
                rest = ranges[int(inner[0])]
                reach = rest.high(integer) if end == "max" else rest.low(integer)
                out.append(f"column '{name}': '{end}: {_number(bound)}' comes from values {gap} powers of two away "
                           f"from the column's other values (which reach {_number(reach)}): a few extreme values, or "
                           f"noise — check it and edit '{end}' by hand (e.g. to a public limit)")
        if 0 <= outer < len(ranges) and noisy[outer] >= NEAR_Z * sigma and not (widened and end == "max"):
            beyond = ranges[outer].low(integer) if end == "min" else ranges[outer].high(integer)
            side, way = ("below", "down") if end == "min" else ("above", "up")
            out.append(f"column '{name}': values {side} '{end}: {_number(bound)}' ({way} to {_number(beyond)}) have a "
                       f"noisy count of {float(noisy[outer]):.0f}, under the threshold {tau} yet above the noise: runs "
                       f"will clip them — widen '{end}' by hand if a public limit allows")
    return out


def _number(x: float) -> str:
    """A bound as a user types it: whole numbers without a decimal point or exponent."""
    return str(int(x)) if float(x).is_integer() else f"{x:.15g}"
