"""The self-contained HTML report: plots are inline HTML bars or inline PNGs, styles inline; no network needed.

Its order answers a reader's questions in turn:

1. **Verdict** — fidelity (2-way and 1-way TVD), utility (TSTR against TRTR) and privacy risk
   (identification risk, membership-inference AUC), each on a stated scale and beside two baselines
   computed from the real rows: the real hold-out part and the independent reference (see
   :func:`spark_synth.evaluate.evaluate`);
2. **Columns** — real vs synthetic shares per column, drawn as HTML bars: category labels wrap and
   are never cut (the full text is also the row's tooltip); a null row only where either table has nulls;
3. the column pairs (association heat maps), utility and privacy details, every measurement (folded);
4. **Privacy budget**, last: ε and ρ spent, the releases grouped by kind (every release folded below).

The page is at most 1,200 px wide and every chart fits its box (``tests/integration/test_report_browser.py``
checks it in headless Chromium). The title names the real table (``metrics['table']``).
"""

from __future__ import annotations

import base64
import html
import io
import math
import re

import numpy as np

from ..schema import ColumnType

#: Categories shown before the rest of a column's are folded (largest shares first).
SHOWN_CATEGORIES = 12
#: Ordinal columns keep their order; past this many categories the rest are folded.
SHOWN_ORDINAL = 40

_REAL, _SYNTH, _HOLD, _IND = "#4c72b0", "#dd8452", "#55a868", "#8c8c8c"


def _esc(value) -> str:
    return html.escape(str(value), quote=True)


def _num(v, digits: int = 3) -> str:
    if v is None or (isinstance(v, float) and not math.isfinite(v)):
        return "–"
    if isinstance(v, (int, np.integer)) and not isinstance(v, bool):
        return f"{int(v):,}"
    return f"{float(v):.{digits}g}"


def _pct(share: float) -> str:
    if share <= 0:
        return "0%"
    if share < 0.001:
        return "<0.1%"
    return f"{100 * share:.1f}%" if share < 0.995 else f"{100 * share:.0f}%"


def _figure_to_img(fig, alt: str) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="{_esc(alt)}" src="data:image/png;base64,{data}"/>'


def _figure(**kwargs):
    """A stand-alone figure: no pyplot, so the caller's (e.g. a notebook's) backend and figures are untouched."""
    from matplotlib.figure import Figure

    return Figure(**kwargs)


# ---- verdict ---------------------------------------------------------------------------------------
def _get(d, *keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _between(value, best, floor, lower_is_better: bool) -> float | None:
    """Where ``value`` lies from ``floor`` (0) to ``best`` (1); None when they are too close to tell."""
    if None in (value, best, floor):
        return None
    gap = (floor - best) if lower_is_better else (best - floor)
    if gap <= 1e-9:
        return None
    return ((floor - value) if lower_is_better else (value - floor)) / gap


def _fidelity_reading(m) -> str:
    marg = m["marginals"]
    syn, hold, ind = (_get(marg, "2way", "tvd_mean"), _get(marg, "baselines", "holdout", "2way", "tvd_mean"),
                      _get(marg, "baselines", "independent", "2way", "tvd_mean"))
    if syn is None:
        return "no column pairs to compare."
    if hold is not None and syn <= hold * 1.05:
        text = "the synthetic rows are as close to the real train rows, pair by pair, as fresh real rows (the hold-out)."
    elif ind is not None and syn < ind:
        share = _between(syn, hold, ind, lower_is_better=True)
        where = f" ({100 * share:.0f}% of the way from the independent reference to the hold-out)" if share is not None else ""
        text = f"closer to the real rows than columns drawn independently: it keeps part of the relations between columns{where}."
    elif ind is not None:
        text = ("no closer to the real rows than columns drawn independently of each other: the relations between "
                "columns are not kept (or are drowned by the noise).")
    else:
        text = f"2-way TVD {_num(syn)}."
    one, one_ind = _get(marg, "1way", "tvd_mean"), _get(marg, "baselines", "independent", "1way", "tvd_mean")
    one_hold = _get(marg, "baselines", "holdout", "1way", "tvd_mean")
    if None not in (one, one_ind, one_hold) and one > 2 * one_ind and one > one_hold:
        text += (f" Even single columns are further off than sampling alone puts them (1-way TVD {_num(one)}; "
                 f"{_num(one_ind)} for the exact shares drawn at the same size): the cost of the privacy noise at this "
                 f"ε and table size, or a poor fit.")
    by_column = _get(marg, "1way", "by_column") or {}
    if by_column:
        worst = max(by_column, key=lambda c: by_column[c])
        text += f" Column furthest off: <a href=\"#col-{_slug(worst)}\">{_esc(worst)}</a> (1-way TVD {_num(by_column[worst])})."
    return text


def _utility_reading(m) -> str:
    util = m.get("utility") or {}
    if "best" not in util:
        return f"not measured: {_esc(util.get('skipped', 'no target'))}."
    p, target = util["primary_metric"], util.get("target") or m.get("target")
    tstr, trtr, ind = (_get(util, "best", "tstr", p), _get(util, "best", "trtr", p), _get(util, "best", "independent", p))
    if tstr is None or trtr is None:
        return "the learners could not be scored."
    if tstr >= trtr - 0.01:
        return f"models trained on the synthetic rows predict <b>{_esc(target)}</b> as well as models trained on the real rows."
    if ind is not None and tstr <= ind + 0.01:
        return (f"models trained on the synthetic rows predict <b>{_esc(target)}</b> no better than ones trained on columns "
                f"drawn independently: its relation to the other columns is lost.")
    share = _between(tstr, trtr, ind, lower_is_better=False)
    where = f": {100 * share:.0f}% of the way from the independent reference to the real rows" if share is not None else ""
    floor = f", {_num(ind)} for the independent reference" if ind is not None else ""
    return (f"models trained on the synthetic rows keep part of what predicts <b>{_esc(target)}</b> ({p} {_num(tstr)}, "
            f"against {_num(trtr)} trained on real rows{floor}){where}.")


def _privacy_reading(m) -> str:
    prox = m["privacy_proxies"]
    risk, hold, n = prox.get("identification_risk"), prox.get("identification_risk_holdout"), prox.get("n_reference")
    if risk is None:
        return "not measured (no rows to compare)."
    copies = prox.get("share_exact_copies_of_train") or 0.0
    copy_text = f" {_pct(copies)} of the synthetic rows are exact copies of train rows." if copies > 0 else ""
    if hold is None:
        return f"identification risk {_num(risk)}.{copy_text}"
    margin = 2 * math.sqrt(max(hold * (1 - hold), 0.01) / max(n or 1, 1))  # two standard errors of a share
    if risk <= hold + margin:
        return (f"the synthetic rows are no closer to the rows the synthesizer saw than fresh real rows are "
                f"(identification risk {_num(risk)}; the hold-out's {_num(hold)}).{copy_text}")
    return (f"the synthetic rows are closer to the rows the synthesizer saw than fresh real rows are "
            f"(identification risk {_num(risk)} against the hold-out's {_num(hold)}): look for copied or rare rows "
            f"below.{copy_text}")


def _cell(value, sub: str = "", strong: bool = False) -> str:
    text = f"<b>{_num(value)}</b>" if strong else _num(value)
    return f'<td class="n">{text}{f"<span class=sub>{sub}</span>" if sub else ""}</td>'


def _verdict(ev) -> str:
    m = ev.metrics
    marg, prox = m["marginals"], m["privacy_proxies"]
    hold_rows, syn_rows = m["rows"]["real_holdout"], m["rows"]["synthetic"]
    ind_rows = _get(marg, "baselines", "independent", "rows")
    rows = []
    rows.append(("Fidelity: column pairs",
                 f"2-way TVD, mean over {_num(_get(marg, '2way', 'n_marginals'))} column pairs: how far each pair's shares "
                 "are from the real train rows'. 0 = the same shares, 1 = nothing in common. Lower is better.",
                 _get(marg, "2way", "tvd_mean"), ("hold-out vs train", _get(marg, "baselines", "holdout", "2way", "tvd_mean")),
                 _get(marg, "baselines", "independent", "2way", "tvd_mean")))
    rows.append(("Fidelity: single columns",
                 f"1-way TVD, mean over {_num(_get(marg, '1way', 'n_marginals'))} columns (same scale).",
                 _get(marg, "1way", "tvd_mean"), ("hold-out vs train", _get(marg, "baselines", "holdout", "1way", "tvd_mean")),
                 _get(marg, "baselines", "independent", "1way", "tvd_mean")))
    util = m.get("utility") or {}
    if "best" in util:
        p = util["primary_metric"]
        scale = ("0.5 = guessing, 1 = perfect" if p == "auroc" else "1 = perfect, 0 = no better than predicting the mean")
        rows.append(("Utility",
                     f"Best {p} of 3 learners predicting <b>{_esc(util['target'])}</b> on the real hold-out rows, trained on "
                     f"the synthetic rows (TSTR). {scale}. Higher is better.",
                     _get(util, "best", "tstr", p), ("trained on real train rows (TRTR)", _get(util, "best", "trtr", p)),
                     _get(util, "best", "independent", p)))
    rows.append(("Privacy risk: identification",
                 "Identification risk: the share of real train rows whose nearest synthetic row is nearer than their "
                 "nearest other train row (entropy-weighted distance). 0 = no train row has a synthetic row that close; "
                 "1 = every one does (a copy of the train rows scores 1). Lower is safer; a value near the hold-out's "
                 "means the synthetic rows sit no closer to the train rows than unseen real rows do.",
                 prox.get("identification_risk"), ("hold-out rows in place of synthetic", prox.get("identification_risk_holdout")),
                 prox.get("identification_risk_independent")))
    rows.append(("Privacy risk: membership",
                 "Membership-inference AUC of a distance attack telling train rows (seen by the synthesizer) from hold-out "
                 "rows (not seen) by how close a synthetic row is. 0.5 = cannot tell them apart, 1 = tells every one. "
                 "Lower (towards 0.5) is safer.",
                 prox.get("membership_auc"), ("by definition", 0.5 if prox.get("membership_auc") is not None else None),
                 prox.get("membership_auc_independent")))
    body = "".join(f"<tr><th scope=row>{_esc(name)}<span class=scale>{scale}</span></th>{_cell(syn, strong=True)}"
                   f"{_cell(real[1], real[0])}{_cell(ind)}</tr>" for name, scale, syn, real, ind in rows)
    readings = (f"<ul class=verdict><li><b>Fidelity</b>: {_fidelity_reading(m)}</li>"
                f"<li><b>Utility</b>: {_utility_reading(m)}</li>"
                f"<li><b>Privacy risk</b>: {_privacy_reading(m)}</li></ul>")
    budget = m.get("privacy_budget")
    spent = (f" The synthetic table is differentially private at ε = {_num(budget['epsilon_spent'])}, "
             f"δ = {_num(budget['delta'])} (<a href=\"#budget\">budget</a>, at the end)." if budget else "")
    size = f"{_num(ind_rows)} rows, the synthetic table's size" if ind_rows else "exact shares"
    baselines = (
        f"<p class=note><b>The baselines.</b> <i>Real rows</i>: the real hold-out part ({_num(hold_rows)} rows the "
        f"synthesizer never saw) — what fresh real data scores; a smaller sample differs more by chance. "
        f"<i>Independent reference</i>: every column drawn on its own from the real train part's shares "
        f"({size}) — what the "
        f"<code>independent</code> engine would give with no noise; a synthesizer that models how columns relate "
        f"should beat it. Both baselines are computed here from the real rows: they spend no privacy budget and, "
        f"like this whole report, are <b>not private</b>.</p>")
    return (f"{readings}<p>Synthetic: {_num(syn_rows)} rows; real train part: {_num(m['rows']['real_train'])} rows; "
            f"real hold-out part: {_num(hold_rows)} rows.{spent}</p>"
            f"<table class=verdict-table><thead><tr><th>measure and its scale</th><th class=n>synthetic</th>"
            f"<th class=n>real rows</th><th class=n>independent reference</th></tr></thead><tbody>{body}</tbody></table>"
            f"{baselines}")


# ---- columns ---------------------------------------------------------------------------------------
def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(name)).strip("-") or "column"


def _bin_text(column, lo: float, hi: float) -> str:
    from ..schema.columns import temporal_text

    if column.type.model_type is ColumnType.INTEGER:
        a, b = math.ceil(lo), math.ceil(hi) - 1
        if column.type is ColumnType.DATE:
            a_text, b_text = temporal_text(column.type, a), temporal_text(column.type, b)
        else:
            a_text, b_text = f"{a:,}", f"{b:,}"
        return a_text if a >= b else f"{a_text} – {b_text}"
    if column.type.is_temporal:
        return f"{temporal_text(column.type, lo)} – {temporal_text(column.type, hi)}"
    return f"{lo:.3g} – {hi:.3g}"


def _bar_row(label: str, real: float, synth: float, top: float, extra_class: str = "") -> str:
    tip = f"{label}: real {_pct(real)}, synthetic {_pct(synth)}"
    return (f'<div class="row{extra_class}" title="{_esc(tip)}"><div class=label>{_esc(label)}</div>'
            f'<div class=bars><span class="bar real" style="width:{100 * real / top:.2f}%"></span>'
            f'<span class="bar syn" style="width:{100 * synth / top:.2f}%"></span></div>'
            f'<div class=val><span class=r>{_pct(real)}</span><span class=s>{_pct(synth)}</span></div></div>')


def _categorical_card(column, p, q) -> str:
    labels = [str(c) for c in column.categories]
    codes = list(range(len(labels)))
    top = max(float(p.max(initial=0)), float(q.max(initial=0)), 1e-12)  # the null row (if shown) on the same scale
    ordinal = column.type is ColumnType.ORDINAL or len(labels) <= SHOWN_CATEGORIES
    limit = SHOWN_ORDINAL if ordinal else SHOWN_CATEGORIES
    order = codes if ordinal else sorted(codes, key=lambda i: -max(p[i], q[i]))
    shown, rest = order[:limit], order[limit:]
    out = "".join(_bar_row(labels[i], p[i], q[i], top) for i in shown)
    if rest:
        rest = sorted(rest)
        out += (f"<details><summary>{len(rest)} more categories ({_pct(float(p[rest].sum()))} of real rows, "
                f"{_pct(float(q[rest].sum()))} of synthetic)</summary>"
                + "".join(_bar_row(labels[i], p[i], q[i], top) for i in rest) + "</details>")
    return f"<div class=cat>{out}</div>"


def _numeric_card(column, p, q) -> str:
    edges = column.bin_edges
    n = len(edges) - 1
    top = max(float(p[:n].max(initial=0)), float(q[:n].max(initial=0)), 1e-12)
    bins = []
    for i in range(n):
        text = _bin_text(column, edges[i], edges[i + 1])
        bins.append(f'<div class=bin title="{_esc(f"{text}: real {_pct(p[i])}, synthetic {_pct(q[i])}")}">'
                    f'<span class=real style="height:{100 * p[i] / top:.2f}%"></span>'
                    f'<span class=syn style="height:{100 * q[i] / top:.2f}%"></span></div>')
    lo, hi = _bin_text(column, edges[0], edges[1]).split(" – ")[0], _bin_text(column, edges[-2], edges[-1]).split(" – ")[-1]
    return (f'<div class=hist role=img aria-label="{_esc(column.name)}: real vs synthetic shares over {n} public bins">'
            f'{"".join(bins)}</div><div class=axis><span class=label>{_esc(lo)}</span>'
            f'<span class=label>{n} bins</span><span class=label>{_esc(hi)}</span></div>')


def _columns(ev) -> str:
    m = ev.metrics
    one_way = ev.details.get("one_way") or {}
    holdout = ev.details.get("one_way_holdout") or {}
    schema = ev.details["eval_schema"]
    by_column = m["marginals"]["1way"].get("by_column", {})
    if not one_way:
        return "<p>No 1-way marginals.</p>"
    from .fidelity import tvd

    cards = []
    for name, (real, synth) in one_way.items():
        column = schema[name]
        real, synth = np.asarray(real, dtype=float), np.asarray(synth, dtype=float)
        p, q = real / max(real.sum(), 1.0), synth / max(synth.sum(), 1.0)
        if column.type.is_discrete:
            chart = _categorical_card(column, p, q)
            kind = f"{column.type.value} · {column.n_values} categories"
        else:
            chart = _numeric_card(column, p, q)
            kind = f"{column.type.value} · {_num(column.min)} to {_num(column.max)}"
        if column.nullable and (p[-1] > 0 or q[-1] > 0):  # no empty null row for a column without nulls
            top = max(float(p.max()), float(q.max()), 1e-12)
            chart += f"<div class=cat>{_bar_row('null (missing)', p[-1], q[-1], top, ' null')}</div>"
        held = f" · hold-out {_num(tvd(real, holdout[name]))}" if name in holdout else ""
        cards.append(f'<div class=card id="col-{_slug(name)}"><h3>{_esc(name)}</h3>'
                     f'<div class=meta title="1-way TVD of this column: synthetic vs real train (and the hold-out\'s, '
                     f'for scale)">TVD {_num(by_column.get(name))}{held} · {_esc(kind)}</div>{chart}</div>')
    legend = (f'<p class=legend><span class="key real"></span> real (train part) <span class="key syn"></span> synthetic '
              f'— share of rows per category or public bin (numeric columns on at most '
              f'{_num(m["marginals"].get("numeric_bins"))} bins; hover a bar for its values). A null row appears only '
              f'where either table has nulls.</p>')
    return legend + f"<div class=cards>{''.join(cards)}</div>"


# ---- pairs, utility and privacy details --------------------------------------------------------------
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


# ---- budget ----------------------------------------------------------------------------------------
def _release_group(entry, columns: set[str]) -> str:
    """A short label grouping releases of one kind: ``marginal[age, income]`` → ``marginal[2 columns]``."""
    scope = re.sub(r"\[\d+\]", "[*]", entry.scope)
    name = entry.name
    match = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", name)
    if match:
        prefix, inside, tail = match.groups()
        parts = [re.split(r"[/@]", part.strip())[0] for part in inside.split(",")]
        if parts and all(part in columns for part in parts):
            name = f"{prefix}[{len(parts)} column{'s' if len(parts) > 1 else ''}]{tail}"
    return f"{scope}/{name}" if scope else name


def _budget(ev) -> str:
    report = ev.details.get("privacy_report")
    if report is None:
        return ("<p>No privacy report was given (pass <code>--privacy-report</code> with a saved synthesizer or its "
                "<code>privacy_report.json</code>; <code>run --evaluate</code> includes it).</p>")
    releases = report.entries
    guarantee = ("" if report.dp_guarantee else
                 "<p class=warn>This fit used private rows outside the DP guarantee (an opt-in): the output is "
                 "<b>not</b> fully covered by the ε below.</p>")
    head = (f"{guarantee}<p>ε spent <b>{_num(report.epsilon_spent, 4)}</b> of {_num(report.epsilon_requested, 4)} at "
            f"δ = {_num(report.delta)} (ρ spent {_num(report.rho_spent, 4)} zCDP; {_esc(report.neighbouring_relation)}); "
            f"{len(report.measurements)} measurements, {len(report.selections)} selections. This is what the guarantee "
            f"covers: the synthetic table; not this report.</p>")
    if not releases:
        return head
    columns = set(ev.schema.names)
    groups: dict[tuple, list] = {}
    for entry in releases:
        groups.setdefault((_release_group(entry, columns), entry.kind, entry.mechanism), []).append(entry)
    total = max(report.rho_spent, 1e-300)
    rows = []
    for (label, kind, mechanism), entries in sorted(groups.items(), key=lambda kv: -sum(e.rho for e in kv[1])):
        rho = math.fsum(e.rho for e in entries)
        noise = [e.sigma if e.sigma is not None else e.scale for e in entries]
        noise = [x for x in noise if x is not None]
        what = "σ" if any(e.sigma is not None for e in entries) else "scale"
        noise_text = ("–" if not noise else f"{what} {_num(min(noise))}" if min(noise) == max(noise)
                      else f"{what} {_num(min(noise))} – {_num(max(noise))}")
        rows.append(f"<tr><td>{_esc(label)}</td><td>{_esc(kind)}<span class=sub>{_esc(mechanism)}</span></td>"
                    f"<td class=n>{len(entries)}</td><td class=n>{_num(rho, 4)}</td>"
                    f'<td class=share><span class=track><span class=sharebar style="width:{100 * rho / total:.1f}%">'
                    f"</span></span> {_pct(rho / total)}</td><td class=n>{noise_text}</td></tr>")
    table = (f"<table class=budget><thead><tr><th>release group</th><th>kind</th><th class=n>count</th>"
             f"<th class=n>ρ</th><th>share of ρ spent</th><th class=n>noise</th></tr></thead><tbody>{''.join(rows)}"
             f"</tbody></table>")
    every = "".join(
        f"<tr><td class=n>{i + 1}</td><td>{_esc(f'{r.scope}/{r.name}' if r.scope else r.name)}</td><td>{_esc(r.query)}</td>"
        f"<td>{_esc(r.mechanism)}</td><td class=n>{_num(r.sigma if r.sigma is not None else r.scale, 4)}</td>"
        f"<td class=n>{_num(r.rho, 4)}</td></tr>" for i, r in enumerate(releases))
    details = (f"<details><summary>every release, in order ({len(releases)})</summary><table class=releases><thead><tr>"
               f"<th class=n>#</th><th>release</th><th>query</th><th>mechanism</th><th class=n>σ / scale</th><th class=n>ρ</th>"
               f"</tr></thead><tbody>{every}</tbody></table></details>")
    return head + table + details


# ---- page ------------------------------------------------------------------------------------------
_STYLE = f"""
*{{box-sizing:border-box}}
body{{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:0 auto;padding:16px 24px;max-width:1200px;
color:#222;line-height:1.4;overflow-wrap:anywhere}}
h1{{font-size:24px;margin:8px 0}} h2{{font-size:18px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:32px}}
h3{{font-size:14px;margin:0}}
table{{border-collapse:collapse;margin:8px 0;font-size:13px;max-width:100%}}
td,th{{border:1px solid #ddd;padding:4px 8px;text-align:left;vertical-align:top}}
th{{background:#f7f7f7}} .n{{text-align:right;white-space:nowrap}}
.sub,.scale{{display:block;font-size:11px;color:#666;font-weight:normal;white-space:normal}}
.verdict-table th[scope=row]{{width:46%}} .verdict-table td{{width:18%}}
ul.verdict{{font-size:15px;padding-left:20px}} ul.verdict li{{margin:6px 0}}
.note{{font-size:13px;color:#444}}
.warn{{background:#fff4e5;border:1px solid #f0b27a;padding:8px 12px;border-radius:4px}}
img{{max-width:100%;height:auto}} code{{background:#f4f4f4;padding:1px 3px}}
.legend{{font-size:13px}} .key{{display:inline-block;width:12px;height:12px;vertical-align:middle;margin:0 2px 0 8px}}
.key.real,.bar.real,.bin .real{{background:{_REAL}}} .key.syn,.bar.syn,.bin .syn{{background:{_SYNTH}}}
.cards{{display:grid;grid-template-columns:repeat(auto-fill,minmax(340px,1fr));gap:14px}}
.card{{border:1px solid #e3e3e3;border-radius:6px;padding:10px 12px;min-width:0}}
.meta{{font-size:11px;color:#666;margin:2px 0 8px}}
.row{{display:grid;grid-template-columns:minmax(0,40%) minmax(0,1fr) 3.6em;gap:6px;align-items:center;
font-size:12px;padding:2px 0;border-top:1px solid #f2f2f2}}
.row .label{{overflow-wrap:anywhere;min-width:0}}
.bars{{display:flex;flex-direction:column;gap:2px}} .bar{{display:block;height:7px;min-width:1px;border-radius:1px}}
.val{{display:flex;flex-direction:column;text-align:right;font-size:11px;line-height:1.2}}
.val .r{{color:{_REAL}}} .val .s{{color:{_SYNTH}}}
.row.null .label{{font-style:italic}}
details summary{{cursor:pointer;font-size:12px;color:#444;margin:4px 0}}
.hist{{display:flex;align-items:flex-end;height:120px;gap:1px;border-bottom:1px solid #999}}
.bin{{flex:1 1 0;min-width:0;height:100%;display:flex;align-items:flex-end;gap:0}}
.bin span{{display:block;flex:1 1 0;min-height:0}}
.axis{{display:flex;justify-content:space-between;font-size:11px;color:#555;gap:8px}}
.axis .label{{overflow-wrap:anywhere;min-width:0}}
td.share{{white-space:nowrap}} .track{{display:inline-block;width:120px;height:10px;background:#eef3ee;
vertical-align:middle;margin-right:4px}} .sharebar{{display:block;height:10px;background:{_HOLD}}}
table.releases{{font-size:11px}}
footer{{color:#888;font-size:12px;margin-top:32px}}
"""


def _split_text(split: dict) -> str:
    if split.get("mode") == "split":
        return f"hold-out fraction {_num(split.get('holdout_fraction'))} of the real table, seed {_esc(split.get('seed'))}"
    return "hold-out given" if split.get("mode") == "given" else _esc(split)


def render_report(evaluation) -> str:
    m = evaluation.metrics
    table = str(m.get("table") or m.get("schema") or "table")
    title = f"{table} — synthetic vs real (spark-synth evaluation)"
    sections = [
        ("verdict", "Verdict", _verdict(evaluation)),
        ("columns", "Columns: real vs synthetic", _columns(evaluation)),
        ("pairs", "Column pairs: association",
         f"<p>|Pearson| for numeric pairs, Cramér's V for categorical pairs, correlation ratio η for mixed pairs "
         f"(0 = unrelated, 1 = fully related); mean |real − synthetic| {_num(m['association'].get('abs_diff_mean'))}."
         f"</p>{_association_plots(evaluation)}"),
        ("utility", "Utility: train on synthetic, test on real hold-out", _utility_details(evaluation)),
        ("privacy", "Privacy proxies (empirical; not a guarantee)", _privacy_details(evaluation)),
        ("measurements", "All measurements", _all_measurements(evaluation)),
        ("budget", "Privacy budget spent", _budget(evaluation)),
    ]
    body = "".join(f'<section id="{sid}"><h2>{heading}</h2>{content}</section>' for sid, heading, content in sections)
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>{_esc(title)}</title><style>{_STYLE}</style></head>
<body><main>
<h1>{_esc(table)}: synthetic vs real</h1>
<p class="warn">{_esc(m['not_private'])}</p>
{body}
</main>
<footer>spark-synth {_esc(m['spark_synth_version'])}; schema {_esc(m.get('schema') or '–')}; seed {_esc(m['seed'])};
split: {_esc(_split_text(m.get('split') or {}))}</footer>
</body></html>
"""
