"""The self-contained HTML report: every plot is an inline PNG, every style inline; no network needed."""

from __future__ import annotations

import base64
import html
import io
import math

import numpy as np

from .fidelity import marginal_labels


def _figure_to_img(fig, alt: str) -> str:
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=90, bbox_inches="tight")
    data = base64.b64encode(buffer.getvalue()).decode("ascii")
    return f'<img alt="{html.escape(alt)}" src="data:image/png;base64,{data}"/>'


def _figure(**kwargs):
    """A stand-alone figure: no pyplot, so the caller's (e.g. a notebook's) backend and figures are untouched."""
    from matplotlib.figure import Figure

    return Figure(**kwargs)


def _marginal_plots(evaluation) -> str:
    one_way = evaluation.details.get("one_way") or {}
    schema = evaluation.details["eval_schema"]
    by_column = evaluation.metrics["marginals"]["1way"].get("by_column", {})
    names = list(one_way)
    if not names:
        return "<p>No 1-way marginals.</p>"
    cols = 3
    rows = math.ceil(len(names) / cols)
    fig = _figure(figsize=(cols * 5.2, rows * 2.9))
    axes = fig.subplots(rows, cols, squeeze=False)
    for ax in axes.ravel()[len(names):]:
        ax.axis("off")
    for ax, name in zip(axes.ravel(), names):
        real, synth = one_way[name]
        p = real / max(real.sum(), 1)
        q = synth / max(synth.sum(), 1)
        labels = marginal_labels(schema, name)
        x = np.arange(len(p))
        ax.bar(x - 0.2, p, width=0.4, label="real (train)", color="#4c72b0")
        ax.bar(x + 0.2, q, width=0.4, label="synthetic", color="#dd8452")
        ax.set_title(f"{name}  (TVD {by_column.get(name, float('nan')):.3f})", fontsize=9)
        if len(labels) <= 24:
            ax.set_xticks(x)
            ax.set_xticklabels([lab[:14] for lab in labels], rotation=60, ha="right", fontsize=6)
        else:
            ax.set_xticks([])
            ax.set_xlabel(f"{len(labels)} codes (categories / public bins, null last)", fontsize=7)
        ax.tick_params(axis="y", labelsize=6)
    axes.ravel()[0].legend(fontsize=7)
    fig.tight_layout()
    return _figure_to_img(fig, "real vs synthetic 1-way marginals")


def _association_plots(evaluation) -> str:
    real, synth = evaluation.details["association"]
    names = evaluation.metrics["association"]["columns"]
    diff = np.abs(real - synth)
    fig = _figure(figsize=(18, 6.2))
    axes = fig.subplots(1, 3)
    for ax, matrix, title, cmap in ((axes[0], real, "real (train)", "viridis"), (axes[1], synth, "synthetic", "viridis"),
                                    (axes[2], diff, "|real − synthetic|", "magma")):
        image = ax.imshow(np.nan_to_num(matrix), vmin=0, vmax=1, cmap=cmap)
        ax.set_title(title, fontsize=10)
        ax.set_xticks(range(len(names)))
        ax.set_yticks(range(len(names)))
        ax.set_xticklabels(names, rotation=90, fontsize=6)
        ax.set_yticklabels(names, fontsize=6)
        fig.colorbar(image, ax=ax, fraction=0.046, pad=0.04)
    fig.tight_layout()
    return _figure_to_img(fig, "association matrices")


def _utility_plot(evaluation) -> str:
    util = evaluation.metrics.get("utility") or {}
    if "learners" not in util:
        return f"<p>Utility skipped: {html.escape(str(util.get('skipped', 'no target')))}</p>"
    metrics = [m for m in ("auroc", "macro_f1", "accuracy", "r2") if m in next(iter(util["learners"].values()))["tstr"]]
    learners = list(util["learners"])
    fig = _figure(figsize=(5.5 * len(metrics), 3.6))
    axes = fig.subplots(1, len(metrics), squeeze=False)
    for ax, metric in zip(axes.ravel(), metrics):
        x = np.arange(len(learners))
        tstr = [util["learners"][n]["tstr"][metric] or 0.0 for n in learners]
        trtr = [util["learners"][n]["trtr"][metric] or 0.0 for n in learners]
        ax.bar(x - 0.2, trtr, width=0.4, label="TRTR (train real)", color="#4c72b0")
        ax.bar(x + 0.2, tstr, width=0.4, label="TSTR (train synthetic)", color="#dd8452")
        ax.set_xticks(x)
        ax.set_xticklabels(learners, fontsize=8)
        ax.set_title(f"{metric} on the real hold-out", fontsize=10)
        ax.set_ylim(min(0.0, *tstr, *trtr), 1.0)
    axes.ravel()[0].legend(fontsize=8)
    fig.tight_layout()
    return _figure_to_img(fig, "TSTR vs TRTR")


def _privacy_budget(evaluation) -> str:
    report = evaluation.details.get("privacy_report")
    if report is None:
        return ("<p>No privacy report was given (pass <code>--privacy-report</code> with a saved synthesizer or its "
                "<code>privacy_report.json</code>; <code>run --evaluate</code> includes it).</p>")
    releases = report.entries
    head = (f"<p>ε spent <b>{report.epsilon_spent:.4g}</b> of {report.epsilon_requested:.4g} "
            f"at δ = {report.delta:.3g} (ρ spent {report.rho_spent:.4g} zCDP, "
            f"{html.escape(report.neighbouring_relation)}); {len(report.measurements)} measurements, "
            f"{len(report.selections)} selections.</p>")
    if not releases:
        return head
    names = [f"{r.scope}/{r.name}" if r.scope else r.name for r in releases]
    rho = [r.rho for r in releases]
    fig = _figure(figsize=(max(6, 0.35 * len(names)), 3.4))
    ax = fig.subplots()
    ax.bar(range(len(names)), rho, color="#55a868")
    ax.set_xticks(range(len(names)))
    ax.set_xticklabels([n[:28] for n in names], rotation=75, ha="right", fontsize=6)
    ax.set_ylabel("ρ (zCDP)")
    ax.set_title("where the privacy budget went (ρ per release)", fontsize=10)
    fig.tight_layout()
    rows = "".join(f"<tr><td>{html.escape(name)}</td><td>{html.escape(r.query)}</td>"
                   f"<td>{html.escape(r.mechanism)}</td><td>{(r.sigma if r.sigma is not None else r.scale):.4g}</td>"
                   f"<td>{r.rho:.4g}</td></tr>" for name, r in zip(names, releases))
    table = ("<details><summary>releases</summary><table><tr><th>release</th><th>query</th><th>mechanism</th>"
             f"<th>σ / scale</th><th>ρ</th></tr>{rows}</table></details>")
    return head + _figure_to_img(fig, "privacy budget by release") + table


def _dcr_plot(evaluation) -> str:
    to_train, to_holdout = evaluation.details.get("dcr", (None, None))
    if to_train is None:
        return ""
    fig = _figure(figsize=(7, 3.2))
    ax = fig.subplots()
    top = float(np.percentile(np.r_[to_train, to_holdout], 99)) or 1.0
    bins = np.linspace(0, top, 40)
    ax.hist(to_train, bins=bins, alpha=0.6, label="synthetic → real train", color="#c44e52")
    ax.hist(to_holdout, bins=bins, alpha=0.6, label="synthetic → real hold-out", color="#8172b2")
    ax.set_xlabel("distance to closest record (public encoding)")
    ax.legend(fontsize=8)
    fig.tight_layout()
    return _figure_to_img(fig, "distance to closest record")


def _table(pairs) -> str:
    rows = "".join(f"<tr><td>{html.escape(k)}</td><td>{_fmt(v)}</td></tr>" for k, v in pairs)
    return f"<table>{rows}</table>"


def _fmt(v) -> str:
    if v is None:
        return "–"
    if isinstance(v, float):
        return f"{v:.4g}"
    if isinstance(v, (list, tuple)):
        return html.escape(", ".join(map(str, v)))
    return html.escape(str(v))


_STYLE = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:24px auto;max-width:1400px;color:#222}
h1{font-size:22px} h2{font-size:17px;border-bottom:1px solid #ddd;padding-bottom:4px;margin-top:32px}
table{border-collapse:collapse;margin:8px 0;font-size:13px} td,th{border:1px solid #ddd;padding:3px 8px;text-align:left}
.warn{background:#fff4e5;border:1px solid #f0b27a;padding:8px 12px;border-radius:4px}
img{max-width:100%} code{background:#f4f4f4;padding:1px 3px}
"""


def render_report(evaluation) -> str:
    m = evaluation.metrics
    marg, dist, assoc, prox = m["marginals"], m["distance"], m["association"], m["privacy_proxies"]
    util = m.get("utility") or {}
    summary = [
        ("rows: real train / real hold-out / synthetic", f"{m['rows']['real_train']:,} / {m['rows']['real_holdout']:,} / {m['rows']['synthetic']:,}"),
        ("1-way TVD mean / max", f"{_fmt(marg['1way']['tvd_mean'])} / {_fmt(marg['1way']['tvd_max'])}"),
        ("2-way TVD mean / max", f"{_fmt(marg['2way']['tvd_mean'])} / {_fmt(marg['2way']['tvd_max'])}"),
        (f"3-way TVD mean / max ({marg['3way']['n_marginals']} triples)", f"{_fmt(marg['3way']['tvd_mean'])} / {_fmt(marg['3way']['tvd_max'])}"),
        ("sliced Wasserstein-1 (public encoding)", dist.get("sliced_w1")),
        ("kernel MMD (sample)", dist.get("mmd")),
        ("association |Δ| mean / max", f"{_fmt(assoc['abs_diff_mean'])} / {_fmt(assoc['abs_diff_max'])} (worst {_fmt(assoc['worst_pair'])})"),
    ]
    if "best" in util:
        p = util["primary_metric"]
        summary.append((f"utility best {p}: TSTR / TRTR", f"{_fmt(util['best']['tstr'][p])} / {_fmt(util['best']['trtr'][p])}"))
    summary += [
        ("DCR median: → train / → hold-out", f"{_fmt(prox.get('dcr_train_median'))} / {_fmt(prox.get('dcr_holdout_median'))}"),
        ("share of synthetic rows closer to train than hold-out", prox.get("share_closer_to_train")),
        ("membership-inference AUC (distance attack)", prox.get("membership_auc")),
        ("identification risk (ε-identifiability, entropy-weighted)", prox.get("identification_risk")),
        ("membership-inference recall / precision (classifier attack)",
         f"{_fmt(prox.get('mia_recall'))} / {_fmt(prox.get('mia_precision'))}"),
    ]
    util_rows = ""
    if "learners" in util:
        for name, s in util["learners"].items():
            for kind in ("tstr", "trtr"):
                util_rows += f"<tr><td>{html.escape(name)}</td><td>{kind.upper()}</td>" + "".join(
                    f"<td>{_fmt(v)}</td>" for v in s[kind].values()) + "</tr>"
        header = "".join(f"<th>{html.escape(k)}</th>" for k in next(iter(util["learners"].values()))["tstr"])
        util_rows = f"<table><tr><th>learner</th><th>train on</th>{header}</tr>{util_rows}</table>"
    title = f"spark-synth evaluation — {html.escape(str(m.get('schema') or 'table'))}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title><style>{_STYLE}</style></head>
<body>
<h1>{title}</h1>
<p class="warn">{html.escape(m['not_private'])}</p>
<h2>Summary</h2>{_table(summary)}
<h2>Privacy budget spent</h2>{_privacy_budget(evaluation)}
<h2>Marginals: real vs synthetic, per column</h2>
<p>Numeric columns on public bins (at most {_fmt(marg.get('numeric_bins'))} per column); nulls are the last code.</p>
{_marginal_plots(evaluation)}
<h2>Association structure</h2>
<p>|Pearson| for numeric pairs, Cramér's V for categorical pairs, correlation ratio η for mixed pairs.</p>
{_association_plots(evaluation)}
<h2>Utility: train on synthetic, test on real hold-out</h2>
{_utility_plot(evaluation)}{util_rows}
<h2>Privacy proxies (empirical; not a guarantee)</h2>
{_dcr_plot(evaluation)}
{_table([(k, v) for k, v in prox.items()])}
<h2>Details</h2>
<details><summary>timings (s)</summary>{_table(list(m.get('timings_s', {}).items()))}</details>
<p style="color:#888;font-size:12px">spark-synth {html.escape(m['spark_synth_version'])}; seed {m['seed']}; split {html.escape(str(m['split']))}</p>
</body></html>
"""
