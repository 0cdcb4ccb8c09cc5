"""The report's verdict: fidelity, utility and privacy risk, each beside its two baselines, in words."""

from __future__ import annotations

import math

from .formatting import _esc, _get, _num, _pct, _slug


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
