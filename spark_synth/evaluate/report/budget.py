"""The report's privacy budget: ε and ρ spent, the releases grouped by kind, and every release."""

from __future__ import annotations

import math
import re

from .formatting import _esc, _num, _pct


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
