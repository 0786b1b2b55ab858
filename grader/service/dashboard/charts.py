"""Charts as inline SVG, drawn on the server: no JavaScript, no front-end build.

Each chart is a ``<figure>``: an ``<svg role="img">`` with a ``<title>`` and a ``<desc>`` that says
what it shows in words, every bar carrying its number as text (readable without colour and when
printed), and under it a ``<details>`` "Data" table with the same labels and numbers, made from the
same lists, so the two cannot disagree.
"""

from __future__ import annotations

import datetime as dt
import hashlib
from html import escape

from markupsafe import Markup

WIDTH, HEIGHT = 640, 240
LEFT, RIGHT, BOTTOM, TOP = 40, 12, 46, 30
CHAR_W = 6.2  # a generous average width of one character at font-size 11, for keeping labels inside the chart


def _ident(title: str) -> str:
    return "chart-" + hashlib.sha1(title.encode()).hexdigest()[:10]


def _svg(ident: str, title: str, description: str, body: list[str]) -> str:
    head = (
        f'<svg class="chart" id="{ident}" viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" height="{HEIGHT}" '
        f'role="img" aria-labelledby="{ident}-t {ident}-d" xmlns="http://www.w3.org/2000/svg">'
        f'<title id="{ident}-t">{escape(title)}</title><desc id="{ident}-d">{escape(description)}</desc>'
    )
    return head + "".join(body) + "</svg>"


def _table(ident: str, title: str, columns: tuple[str, str], rows: list[tuple[str, str]], numbered: bool) -> str:
    number = '<th scope="col" class="num">Bar</th>' if numbered else ""
    head = f'{number}<th scope="col">{escape(columns[0])}</th><th scope="col" class="num">{escape(columns[1])}</th>'
    body = "".join(
        "<tr>"
        + (f'<td class="num">{i}</td>' if numbered else "")
        + f'<th scope="row">{escape(label)}</th><td class="num">{escape(value)}</td></tr>'
        for i, (label, value) in enumerate(rows, start=1)
    )
    return (
        f'<details class="chart-data" id="{ident}-data"><summary>Data</summary>'
        f'<table data-chart="{ident}"><caption>{escape(title)}</caption>'
        f"<thead><tr>{head}</tr></thead><tbody>{body}</tbody></table></details>"
    )


def bars(
    title: str,
    labels: list[str],
    values: list[float],
    unit: str = "",
    marker: float | None = None,
    marker_label: str = "deadline",
    ticks: list[tuple[float, str]] | None = None,
    columns: tuple[str, str] = ("Bar", "Value"),
    axis: str = "",
) -> Markup:
    """A vertical bar chart and its data table.

    ``marker`` (0 to 1 along the axis) draws a dashed line labelled ``marker_label``: the deadline.
    ``ticks`` ((0 to 1, label) pairs) label the axis instead of the bars: times, say; ``axis`` names it.
    """
    ident = _ident(title)
    count = max(1, len(values))
    top = max(values, default=0) or 1
    plot_w, plot_h = WIDTH - LEFT - RIGHT, HEIGHT - BOTTOM - TOP
    base = TOP + plot_h
    step = plot_w / count
    body = [
        f'<line x1="{LEFT}" y1="{base}" x2="{WIDTH - RIGHT}" y2="{base}" stroke="#333"/>',
        f'<text x="4" y="{TOP + 4}" font-size="11">{top:g}{escape(unit)}</text>',
    ]
    # Labels that do not fit under their bar become bar numbers; the full label is the bar's tooltip
    # and the data table's row.
    numbered = ticks is None and any(len(label) * 6 > step for label in labels)
    for i, (label, value) in enumerate(zip(labels, values, strict=True)):
        height = plot_h * value / top
        x = LEFT + i * step
        body.append(
            f'<rect x="{x + step * 0.1:.1f}" y="{base - height:.1f}" width="{step * 0.8:.1f}" '
            f'height="{height:.1f}" fill="#4a6fa5"><title>{escape(label)}: {value:g}{escape(unit)}</title></rect>'
        )
        if value:
            body.append(
                f'<text class="value" x="{x + step / 2:.1f}" y="{base - height - 3:.1f}" font-size="10" '
                f'text-anchor="middle">{value:g}</text>'
            )
        if ticks is None and (len(labels) <= 12 or i % max(1, len(labels) // 8) == 0):
            body.append(
                f'<text class="label" x="{x + step / 2:.1f}" y="{base + 14}" font-size="10" '
                f'text-anchor="middle">{i + 1 if numbered else escape(label)}</text>'
            )
    for n, (where, label) in enumerate(ticks or []):
        x = LEFT + where * plot_w
        # the first and last labels grow inwards, so that none sticks out of the chart
        anchor = "start" if n == 0 else "end" if n == len(ticks or []) - 1 else "middle"
        body.append(
            f'<line x1="{x:.1f}" y1="{base}" x2="{x:.1f}" y2="{base + 4}" stroke="#333"/>'
            f'<text class="tick" x="{x:.1f}" y="{base + 16}" font-size="10" '
            f'text-anchor="{anchor}">{escape(label)}</text>'
        )
    if axis:
        body.append(
            f'<text class="axis" x="{LEFT + plot_w / 2:.1f}" y="{HEIGHT - 6}" font-size="11" '
            f'text-anchor="middle">{escape(axis)}</text>'
        )
    if marker is not None:
        x = LEFT + marker * plot_w
        # the label goes above the bars' numbers, on the side of the line with room for it: never cut off
        room_right = WIDTH - 2 - (x + 4)
        right = len(marker_label) * CHAR_W <= room_right
        label_x, anchor = (x + 4, "start") if right else (x - 4, "end")
        body.append(
            f'<line x1="{x:.1f}" y1="{TOP - 26}" x2="{x:.1f}" y2="{base}" stroke="#b00" '
            f'stroke-width="2" stroke-dasharray="6 3"/>'
            f'<text class="marker" x="{label_x:.1f}" y="{TOP - 17}" font-size="11" fill="#b00" '
            f'text-anchor="{anchor}">{escape(marker_label)}</text>'
        )
    rows = [(label, f"{value:g}{unit}") for label, value in zip(labels, values, strict=True)]
    summary = "; ".join(f"{label}: {value}" for label, value in rows)
    svg = _svg(ident, title, summary, body)
    table = _table(ident, title, columns, rows, numbered)
    return Markup(f'<figure class="chart-figure">{svg}{table}</figure>')


def histogram(title: str, bins: list[tuple[str, int]], columns: tuple[str, str] = ("Range", "Count")) -> Markup:
    return bars(title, [label for label, _ in bins], [float(n) for _, n in bins], columns=columns)


def _when(value: dt.datetime, span: dt.timedelta) -> str:
    return f"{value:%H:%M}" if span <= dt.timedelta(hours=12) else f"{value:%d %b %H:%M}"


def timeline(title: str, buckets: list[tuple[dt.datetime, int]], deadline: dt.datetime | None) -> Markup:
    """Arrivals per time bucket (equal spans, see ``stats.over_time``), with the deadline marked.

    The axis carries five times (UTC); the data table gives every bucket's start.
    """
    labels = [f"{start:%Y-%m-%d %H:%M}" for start, _ in buckets]
    marker, ticks = None, None
    if len(buckets) > 1:
        first = buckets[0][0]
        span = (buckets[1][0] - first) * len(buckets)
        ticks = [(k / 4, _when(first + span * k / 4, span)) for k in range(5)]
        if deadline is not None:
            marker = min(1.0, max(0.0, (deadline - first) / span))
    label = "deadline" if deadline is None else f"deadline {deadline:%d %b %H:%M}"
    return bars(
        title,
        labels,
        [float(n) for _, n in buckets],
        marker=marker,
        marker_label=label,
        ticks=ticks,
        columns=("Received from (UTC)", "Submissions"),
        axis="received (UTC)",
    )
