"""How the report writes values: escaped text, numbers and shares, inline PNG figures, anchors."""

from __future__ import annotations

import base64
import html
import io
import math
import re

import numpy as np


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


def _get(d, *keys):
    for k in keys:
        if not isinstance(d, dict) or k not in d:
            return None
        d = d[k]
    return d


def _slug(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9_-]+", "-", str(name)).strip("-") or "column"
