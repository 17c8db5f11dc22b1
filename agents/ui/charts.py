"""Inline SVG charts (no JavaScript library, no CDN): line charts of a few series over x values."""

from __future__ import annotations

import math
from collections.abc import Sequence
from html import escape
from typing import TypeGuard

PALETTE = ("#2563eb", "#dc2626", "#16a34a", "#9333ea", "#ea580c", "#0891b2", "#4b5563", "#db2777")


def _finite(v: float | None) -> TypeGuard[float]:
    return v is not None and isinstance(v, (int, float)) and math.isfinite(v)


def line_chart(
    xs: Sequence[float],
    series: dict[str, Sequence[float | None]],
    *,
    title: str = "",
    width: int = 640,
    height: int = 220,
    chart_id: str = "",
    point_links: str | None = None,  # a data attribute name put on each point (the JS jumps to that x)
    y_range: tuple[float, float] | None = None,
) -> str:
    """An SVG line chart; gaps (None / NaN) break the line. Each point carries its x and value in a <title>."""
    pad_l, pad_r, pad_t, pad_b = 48, 12, 24 if title else 10, 28
    values = [float(v) for vals in series.values() for v in vals if _finite(v)]
    if not xs or not values:
        return f'<p class="muted">{escape(title)}: no values recorded</p>'
    lo, hi = y_range if y_range else (min(values), max(values))
    if y_range is None and lo == hi:
        lo, hi = lo - 1, hi + 1
    x0, x1 = min(xs), max(xs)
    if x0 == x1:
        x0, x1 = x0 - 1, x1 + 1

    def sx(x: float) -> float:
        return pad_l + (x - x0) / (x1 - x0) * (width - pad_l - pad_r)

    def sy(y: float) -> float:
        return height - pad_b - (y - lo) / (hi - lo) * (height - pad_t - pad_b)

    parts = [
        f'<svg class="chart" id="{escape(chart_id)}" viewBox="0 0 {width} {height}" width="{width}" height="{height}" '
        f'role="img" aria-label="{escape(title)}">'
    ]
    if title:
        parts.append(f'<text x="{pad_l}" y="15" class="chart-title">{escape(title)}</text>')
    for k in range(5):  # horizontal grid with y labels
        y = lo + (hi - lo) * k / 4
        parts.append(
            f'<line x1="{pad_l}" x2="{width - pad_r}" y1="{sy(y):.1f}" y2="{sy(y):.1f}" class="grid"/>'
            f'<text x="{pad_l - 4}" y="{sy(y) + 4:.1f}" class="tick" text-anchor="end">{y:.3g}</text>'
        )
    if lo < 0 < hi:
        parts.append(f'<line x1="{pad_l}" x2="{width - pad_r}" y1="{sy(0):.1f}" y2="{sy(0):.1f}" class="zero"/>')
    for k in range(min(6, len(xs))):  # x labels
        x = x0 + (x1 - x0) * k / max(1, min(6, len(xs)) - 1)
        parts.append(f'<text x="{sx(x):.1f}" y="{height - 8}" class="tick" text-anchor="middle">{x:.4g}</text>')
    for n, (name, vals) in enumerate(series.items()):
        color = PALETTE[n % len(PALETTE)]
        runs: list[list[tuple[float, float]]] = [[]]
        for x, v in zip(xs, vals):
            if _finite(v):
                runs[-1].append((sx(x), sy(float(v))))
            elif runs[-1]:
                runs.append([])
        for r in runs:
            if len(r) > 1:
                pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in r)
                parts.append(f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="2"/>')
        if len(xs) <= 200:
            for x, v in zip(xs, vals):
                if _finite(v):
                    attr = f' data-{point_links}="{x:g}"' if point_links else ""
                    parts.append(
                        f'<circle cx="{sx(x):.1f}" cy="{sy(float(v)):.1f}" r="4" fill="{color}" '
                        f'class="pt" data-series="{escape(name)}"{attr}><title>{escape(name)} at {x:g}: '
                        f"{float(v):.4g}</title></circle>"
                    )
    legend_x = pad_l + 8
    for n, name in enumerate(series):
        color = PALETTE[n % len(PALETTE)]
        y = pad_t + 12 + 14 * n
        parts.append(
            f'<rect x="{legend_x}" y="{y - 8}" width="10" height="10" fill="{color}"/>'
            f'<text x="{legend_x + 14}" y="{y + 1}" class="legend">{escape(name)}</text>'
        )
    parts.append("</svg>")
    return "".join(parts)
