"""The report's columns: real vs synthetic shares of each column, as HTML bars."""

from __future__ import annotations

import math

import numpy as np

from ...schema import ColumnType
from .formatting import _esc, _num, _pct, _slug

#: Categories shown before the rest of a column's are folded (largest shares first).
SHOWN_CATEGORIES = 12
#: Ordinal columns keep their order; past this many categories the rest are folded.
SHOWN_ORDINAL = 40


def _bin_text(column, lo: float, hi: float) -> str:
    from ...schema.columns import temporal_text

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
    from ..fidelity import tvd

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
