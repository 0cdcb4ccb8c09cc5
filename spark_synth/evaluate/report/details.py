"""The report's details: association heat maps, the utility learners, the privacy proxies and every
measurement beside its baselines."""

from __future__ import annotations

import numpy as np

from .formatting import _esc, _figure, _figure_to_img, _get, _num


def _association_plots(ev) -> str:
    real, synth = ev.details["association"]
    names = ev.metrics["association"]["columns"]
    diff = np.abs(real - synth)
    fig = _figure(figsize=(12, 4.4))
    axes = fig.subplots(1, 3)
    small = 7 if len(names) <= 20 else 5
    for ax, matrix, title, cmap in ((axes[0], real, "real (train)", "viridis"), (axes[1], synth, "synthetic", "viridis"),
                                    (axes[2], diff, "|real − synthetic|", "magma")):
        image = ax.imshow(np.nan_to_num(matrix), vmin=0, vmax=1, cmap=cmap)
        ax.set_title(title, fontsize=10)
        ax.set_xticks(range(len(names)))
        ax.set_yticks(range(len(names)))
        ax.set_xticklabels(names, rotation=90, fontsize=small)
        ax.set_yticklabels(names, fontsize=small)
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    fig.tight_layout()
    return _figure_to_img(fig, "association matrices: real, synthetic, and their difference")


def _utility_details(ev) -> str:
    util = ev.metrics.get("utility") or {}
    if "learners" not in util:
        return f"<p>Utility skipped: {_esc(util.get('skipped', 'no target'))}.</p>"
    metrics = list(next(iter(util["learners"].values()))["tstr"])
    kinds = [("tstr", "synthetic rows (TSTR)"), ("trtr", "real train rows (TRTR)"), ("independent", "independent reference")]
    rows = ""
    for name, scores in util["learners"].items():
        for kind, label in kinds:
            if kind in scores:
                rows += (f"<tr><td>{_esc(name)}</td><td>{label}</td>"
                         + "".join(f"<td class=n>{_num(scores[kind][k])}</td>" for k in metrics) + "</tr>")
    header = "".join(f"<th class=n>{_esc(k)}</th>" for k in metrics)
    sizes = util.get("rows") or {}
    return (f"<p>Each learner is trained on one of the row sets below and scored on the "
            f"{_num(sizes.get('real_holdout_test'))} real hold-out rows; {_esc(util['task'])} of "
            f"<b>{_esc(util['target'])}</b>.</p><table><thead><tr><th>learner</th><th>trained on</th>{header}</tr></thead>"
            f"<tbody>{rows}</tbody></table>")


def _dcr_plot(ev) -> str:
    to_train, to_holdout = ev.details.get("dcr", (None, None))
    if to_train is None:
        return ""
    fig = _figure(figsize=(7, 3.0))
    ax = fig.subplots()
    top = float(np.percentile(np.r_[to_train, to_holdout], 99)) or 1.0
    bins = np.linspace(0, top, 40)
    ax.hist(to_train, bins=bins, alpha=0.6, label="synthetic → nearest real train row", color="#c44e52")
    ax.hist(to_holdout, bins=bins, alpha=0.6, label="synthetic → nearest real hold-out row", color="#8172b2")
    ax.set_xlabel("distance to closest record (public encoding)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _figure_to_img(fig, "distance to closest record: to train and to hold-out")


_PROXY_TEXT = {
    "dcr_train_median": "median distance from a synthetic row to its nearest real train row",
    "dcr_holdout_median": "the same to its nearest real hold-out row (about equal: no sign of copying)",
    "dcr_train_p05": "5th percentile of the distance to train (0: some rows are copies)",
    "dcr_holdout_p05": "5th percentile of the distance to hold-out",
    "share_exact_copies_of_train": "share of synthetic rows equal to a train row",
    "share_closer_to_train": "share of synthetic rows nearer to train than to hold-out (0.5: no copying; 1: a copy of train)",
    "membership_auc": "distance attack: AUC telling train rows from hold-out rows (0.5: cannot tell)",
    "membership_auc_independent": "the same attack against the independent reference",
    "identification_risk": "share of train rows whose nearest synthetic row is nearer than their nearest other train row",
    "identification_risk_holdout": "the same with the hold-out rows in place of the synthetic ones",
    "identification_risk_independent": "the same with the independent reference",
    "mia_recall": "classifier attack: share of train rows it flags as members",
    "mia_precision": "classifier attack: share of flagged rows that are members (0.5: no better than guessing)",
    "n_reference": "rows of train and of hold-out compared (samples)",
    "n_synthetic": "synthetic rows compared (sample)",
}


def _privacy_details(ev) -> str:
    prox = ev.metrics["privacy_proxies"]
    rows = "".join(f"<tr><td>{_esc(k)}</td><td class=n>{_num(v)}</td><td>{_esc(_PROXY_TEXT.get(k, ''))}</td></tr>"
                   for k, v in prox.items())
    return (f"{_dcr_plot(ev)}<p>Empirical proxies on samples of the public encoding: they are <b>not</b> a privacy "
            f"guarantee (that is the budget's, below).</p><table><thead><tr><th>proxy</th><th class=n>value</th>"
            f"<th>meaning</th></tr></thead><tbody>{rows}</tbody></table>")


def _all_measurements(ev) -> str:
    m = ev.metrics
    marg, dist, assoc = m["marginals"], m["distance"], m["association"]
    base = marg.get("baselines") or {}
    rows = []
    for k in ("1way", "2way", "3way"):
        label = {"1way": "1-way", "2way": "2-way", "3way": "3-way"}[k]
        rows.append((f"{label} TVD mean / max ({_num(_get(marg, k, 'n_marginals'))} marginals)",
                     f"{_num(_get(marg, k, 'tvd_mean'))} / {_num(_get(marg, k, 'tvd_max'))}",
                     f"{_num(_get(base, 'holdout', k, 'tvd_mean'))} / {_num(_get(base, 'holdout', k, 'tvd_max'))}",
                     f"{_num(_get(base, 'independent', k, 'tvd_mean'))} / {_num(_get(base, 'independent', k, 'tvd_max'))}"))
    rows.append(("sliced Wasserstein-1 (public encoding)", _num(dist.get("sliced_w1")), "", ""))
    rows.append(("kernel MMD (sample)", _num(dist.get("mmd")), "", ""))
    worst = assoc.get("worst_pair")
    rows.append((f"association |Δ| mean / max (worst: {_esc(', '.join(map(str, worst)) if worst else '–')})",
                 f"{_num(assoc.get('abs_diff_mean'))} / {_num(assoc.get('abs_diff_max'))}", "", ""))
    for column, levels in (marg.get("hierarchy") or {}).items():
        rows.append((f"hierarchy TVD of {_esc(column)} by level",
                     _esc(", ".join(f"{lvl} {_num(v)}" for lvl, v in levels.items())), "", ""))
    body = "".join(f"<tr><td>{a}</td><td class=n>{b}</td><td class=n>{c}</td><td class=n>{d}</td></tr>" for a, b, c, d in rows)
    timings = "".join(f"<tr><td>{_esc(k)}</td><td class=n>{_num(v)}</td></tr>" for k, v in (m.get("timings_s") or {}).items())
    return (f"<details><summary>show every measurement beside its baselines, and the steps' timings</summary>"
            f"<table><thead><tr><th>measure</th><th class=n>synthetic</th><th class=n>real hold-out</th>"
            f"<th class=n>independent reference</th></tr></thead><tbody>{body}</tbody></table>"
            f"<table><thead><tr><th>step</th><th class=n>seconds</th></tr></thead><tbody>{timings}</tbody></table></details>")
