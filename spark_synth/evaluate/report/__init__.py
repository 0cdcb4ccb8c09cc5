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

The sections are built in :mod:`.verdict`, :mod:`.columns`, :mod:`.details` and :mod:`.budget`
(values written by :mod:`.formatting`); this module lays out the page.
"""

from __future__ import annotations

from .budget import _budget, _release_group  # noqa: F401 (re-exported)
from .columns import SHOWN_CATEGORIES, SHOWN_ORDINAL, _columns  # noqa: F401 (re-exported)
from .details import _all_measurements, _association_plots, _privacy_details, _utility_details
from .formatting import _esc, _num
from .verdict import _verdict

_REAL, _SYNTH, _HOLD, _IND = "#4c72b0", "#dd8452", "#55a868", "#8c8c8c"


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
