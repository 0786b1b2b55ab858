"""Charts as inline SVG, drawn on the server: no JavaScript, no front-end build.

Each chart is an ``<svg role="img">`` with a ``<title>`` and a ``<desc>`` that says what it
shows in words, every bar carries its number as text (readable without colour and when
printed), and the page puts the same numbers in a table beside it.
"""

from __future__ import annotations

import datetime as dt
from html import escape

from markupsafe import Markup

WIDTH, HEIGHT = 640, 220
LEFT, BOTTOM, TOP = 40, 40, 20


def _svg(title: str, description: str, body: list[str]) -> Markup:
    head = (
        f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" role="img" '
        f'aria-labelledby="t d" xmlns="http://www.w3.org/2000/svg">'
        f"<title>{escape(title)}</title><desc>{escape(description)}</desc>"
    )
    return Markup(head + "".join(body) + "</svg>")


def bars(title: str, labels: list[str], values: list[float], unit: str = "", marker: float | None = None) -> Markup:
    """A vertical bar chart; ``marker`` (0 to 1 along the axis) draws a dashed line: the deadline."""
    count = max(1, len(values))
    top = max(values, default=0) or 1
    plot_w, plot_h = WIDTH - LEFT - 10, HEIGHT - BOTTOM - TOP
    step = plot_w / count
    body = [
        f'<line x1="{LEFT}" y1="{TOP + plot_h}" x2="{WIDTH - 10}" y2="{TOP + plot_h}" stroke="#333"/>',
        f'<text x="4" y="{TOP + 4}" font-size="11">{top:g}{escape(unit)}</text>',
    ]
    # Labels that do not fit under their bar become bar numbers; the full label is the bar's tooltip
    # and the table beside the chart.
    numbered = any(len(label) * 6 > step for label in labels)
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        height = plot_h * value / top
        x = LEFT + i * step
        body.append(
            f'<rect x="{x + step * 0.1:.1f}" y="{TOP + plot_h - height:.1f}" width="{step * 0.8:.1f}" '
            f'height="{height:.1f}" fill="#4a6fa5"><title>{escape(label)}: {value:g}{escape(unit)}</title></rect>'
        )
        if value:
            body.append(
                f'<text x="{x + step / 2:.1f}" y="{TOP + plot_h - height - 3:.1f}" font-size="10" '
                f'text-anchor="middle">{value:g}</text>'
            )
        if len(labels) <= 12 or i % max(1, len(labels) // 8) == 0:
            body.append(
                f'<text x="{x + step / 2:.1f}" y="{HEIGHT - BOTTOM + 14}" font-size="10" '
                f'text-anchor="middle">{i + 1 if numbered else escape(label)}</text>'
            )
    if marker is not None:
        x = LEFT + marker * plot_w
        body.append(
            f'<line x1="{x:.1f}" y1="{TOP - 6}" x2="{x:.1f}" y2="{TOP + plot_h}" stroke="#b00" '
            f'stroke-width="2" stroke-dasharray="6 3"/>'
            f'<text x="{x + 3:.1f}" y="{TOP + 2}" font-size="11" fill="#b00">deadline</text>'
        )
    summary = "; ".join(f"{label}: {value:g}{unit}" for label, value in zip(labels, values, strict=True))
    return _svg(title, summary, body)


def histogram(title: str, bins: list[tuple[str, int]]) -> Markup:
    return bars(title, [label for label, _ in bins], [float(n) for _, n in bins])


def timeline(title: str, buckets: list[tuple[dt.datetime, int]], deadline: dt.datetime | None) -> Markup:
    """Arrivals per time bucket (equal spans, see ``stats.over_time``), with the deadline marked."""
    labels = [f"{start:%m-%d %H:%M}" for start, _ in buckets]
    marker = None
    if deadline is not None and len(buckets) > 1:
        first = buckets[0][0]
        span = (buckets[1][0] - first) * len(buckets)
        marker = min(1.0, max(0.0, (deadline - first) / span))
    return bars(title, labels, [float(n) for _, n in buckets], marker=marker)
