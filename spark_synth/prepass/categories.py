"""The categories of a text column: a DP thresholded count of its values."""

from __future__ import annotations

import numpy as np

from ..privacy import PrivacyFilter
from ..privacy.thresholding import release_keys
from ..schema.readers import TODO

#: Most categories a column keeps (those with the largest noisy counts).
MAX_CATEGORIES = 1000


def _categories(privacy_filter: PrivacyFilter, name: str, profile, rho: float, delta: float):
    """The categories kept by the DP thresholded count, sorted; ``TODO`` when none is kept."""
    keys = sorted(profile.categories)
    counts = np.asarray([profile.categories[k] for k in keys], dtype=np.int64)
    kept, noisy = release_keys(privacy_filter, counts, rho, delta, name=f"{name}: categories",
                               description=f"thresholded counts of {name}'s values (one value per row)")
    chosen = [(-noisy[i], keys[i]) for i in np.flatnonzero(kept)]
    chosen = sorted(chosen)[:MAX_CATEGORIES]  # the largest noisy counts: post-processing
    return sorted(k for _, k in chosen) if chosen else TODO
