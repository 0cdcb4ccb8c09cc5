"""Evaluation of a synthetic table against the real one: fidelity, utility, privacy proxies, report.

**Not private.** Everything here reads real rows and is outside the differential-privacy guarantee.

* :func:`evaluate` — all metrics for a (real, synthetic) pair of Spark DataFrames; returns an
  :class:`Evaluation` whose ``write(dir)`` saves ``metrics.json`` and a self-contained ``report.html``.
* :func:`train_holdout_split` — the deterministic split of the fair protocol (fit on train only).
* Building blocks: :mod:`.fidelity` (TVD of 1/2/3-way marginals), :mod:`.distance` (sliced W1, MMD),
  :mod:`.association` (Pearson / Cramér's V / correlation ratio), :mod:`.utility` (TSTR/TRTR),
  :mod:`.privacy` (DCR, closer-to-train share, membership inference).
"""

from .core import NOT_PRIVATE_NOTE, Evaluation, check_out_dir, evaluate, load_privacy_report
from .split import hash_sample, train_holdout_split

__all__ = ["evaluate", "Evaluation", "train_holdout_split", "hash_sample", "check_out_dir", "load_privacy_report",
           "NOT_PRIVATE_NOTE"]
