"""Inline SVG charts for the HTML reports: lines over time and bars.

Drawn here rather than by a charting script so a report is one file that opens anywhere, offline,
without running code. Every text that reaches the SVG is escaped by this module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from html import escape

WIDTH, HEIGHT = 960, 300
# Plot margins: tick labels on the left, tick labels and the axis title below, legend above.
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 34, 50
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
# Points get markers up to this many, so a short run (a few buckets) still shows its values.
MARKERS_UP_TO = 40
CHAR_W = 7.0  # rough width of a 12 px character, to lay out the legend without measuring text


@dataclass(frozen=True)
class Series:
    """One line of a chart: its legend name, colour, and ``(x, y)`` points (y None: a gap)."""

    name: str
    color: str
    points: Sequence[tuple[float, float | None]]


def nice_ticks(high: float, count: int = 5) -> list[float]:
    """Return ticks from 0 to at least ``high``, a step of 1, 2, 2.5 or 5 times a power of ten.

    Args:
        high: The largest value to show (anything not above 0 gives the ticks of 0..1).
        count: About how many steps.

    Returns:
        The tick values, the last one >= ``high``.

    """
    if not high > 0:
        high = 1.0
    raw = high / count
    magnitude = 10.0 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw * (1 - 1e-9))
    steps = math.ceil(high / step - 1e-9)
    return [i * step for i in range(steps + 1)]


def label(value: float) -> str:
    """Format a tick value: thousands separated, no float noise (0.30000000000000004 -> 0.3)."""
    return f"{value:,.6g}"


def _frame(title: str, x_label: str, y_label: str, body: list[str]) -> str:
    middle_y = TOP + PLOT_H / 2
    return "\n".join(
        [
            f'<svg class="chart" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" role="img" '
            f'xmlns="http://www.w3.org/2000/svg" font-size="12">',
            f"<title>{escape(title)}</title>",
            *body,
            f'<text x="{LEFT + PLOT_W / 2:.1f}" y="{HEIGHT - 8}" text-anchor="middle" '
            f'fill="#374151">{escape(x_label)}</text>',
            f'<text transform="translate(16 {middle_y:.1f}) rotate(-90)" text-anchor="middle" '
            f'fill="#374151">{escape(y_label)}</text>',
            "</svg>",
        ]
    )


def _y_axis(ticks: Sequence[float]) -> list[str]:
    out = []
    for tick in ticks:
        y = TOP + PLOT_H * (1 - tick / ticks[-1])
        out.append(
            f'<line x1="{LEFT}" x2="{LEFT + PLOT_W}" y1="{y:.1f}" y2="{y:.1f}" '
            f'stroke="{"#9ca3af" if tick == 0 else "#e5e7eb"}"/>'
        )
        out.append(
            f'<text x="{LEFT - 8}" y="{y + 4:.1f}" text-anchor="end" fill="#4b5563">'
            f"{label(tick)}</text>"
        )
    return out


def _legend(series: Sequence[Series]) -> list[str]:
    """Swatches and names in a row ending at the plot's right edge, above the plot."""
    out = []
    x = float(LEFT + PLOT_W)
    for s in reversed(series):
        x -= len(s.name) * CHAR_W
        out.append(f'<text x="{x:.1f}" y="{TOP - 12}" fill="#111827">{escape(s.name)}</text>')
        x -= 18
        out.append(
            f'<rect x="{x:.1f}" y="{TOP - 21}" width="12" height="12" rx="2" fill="{s.color}"/>'
        )
        x -= 16
    return out


def _no_data(text: str) -> str:
    return (
        f'<text x="{LEFT + PLOT_W / 2:.1f}" y="{TOP + PLOT_H / 2:.1f}" text-anchor="middle" '
        f'font-size="16" fill="#6b7280">{escape(text)}</text>'
    )


def line_chart(
    title: str,
    series: Sequence[Series],
    *,
    x_max: float,
    x_label: str,
    y_label: str,
    empty: str = "no data",
) -> str:
    """Draw ``series`` as lines over ``0..x_max``, with a legend and labelled axes.

    Args:
        title: The SVG's ``<title>`` (what a screen reader and the browser's tooltip say).
        series: The lines; a None y breaks a line, so a bucket without data is a gap, not a 0.
        x_max: Right end of the x axis.
        x_label: Title of the x axis.
        y_label: Title of the y axis.
        empty: Shown in the plot when no series has a value.

    Returns:
        The ``<svg>`` element.

    """
    values = [y for s in series for _, y in s.points if y is not None]
    y_ticks = nice_ticks(max(values, default=0.0))
    x_max = x_max if x_max > 0 else 1.0
    body = _y_axis(y_ticks)
    for tick in nice_ticks(x_max, 8):
        if tick <= x_max * (1 + 1e-9):
            x = LEFT + PLOT_W * tick / x_max
            body.append(
                f'<text x="{x:.1f}" y="{TOP + PLOT_H + 18}" text-anchor="middle" '
                f'fill="#4b5563">{label(tick)}</text>'
            )
    if not values:
        return _frame(title, x_label, y_label, [*body, _no_data(empty)])

    def at(x: float, y: float) -> str:
        return f"{LEFT + PLOT_W * x / x_max:.1f},{TOP + PLOT_H * (1 - y / y_ticks[-1]):.1f}"

    for s in series:
        segments: list[list[str]] = [[]]
        for x, y in s.points:
            if y is None:
                segments.append([])
            else:
                segments[-1].append(at(x, y))
        for segment in segments:
            if len(segment) > 1:
                body.append(
                    f'<polyline points="{" ".join(segment)}" fill="none" stroke="{s.color}" '
                    'stroke-width="2" stroke-linejoin="round"/>'
                )
            if len(s.points) <= MARKERS_UP_TO or len(segment) == 1:
                for point in segment:
                    cx, cy = point.split(",")
                    body.append(f'<circle cx="{cx}" cy="{cy}" r="3" fill="{s.color}"/>')
    return _frame(title, x_label, y_label, body + _legend(series))


def bar_chart(
    title: str,
    labels: Sequence[str],
    counts: Sequence[int],
    *,
    color: str,
    x_label: str,
    y_label: str,
    empty: str = "no data",
) -> str:
    """Draw one bar a category, its count above it and its label below.

    Returns:
        The ``<svg>`` element (``empty`` in the plot when there are no bars or all are 0).

    """
    ticks = nice_ticks(max(counts, default=0))
    body = _y_axis(ticks)
    if not any(counts):
        return _frame(title, x_label, y_label, [*body, _no_data(empty)])
    slot = PLOT_W / len(counts)
    bar = slot * 0.72
    for index, (name, count) in enumerate(zip(labels, counts, strict=True)):
        x = LEFT + slot * index + (slot - bar) / 2
        height = PLOT_H * count / ticks[-1]
        middle = x + bar / 2
        body.append(
            f'<rect x="{x:.1f}" y="{TOP + PLOT_H - height:.1f}" width="{bar:.1f}" '
            f'height="{height:.1f}" fill="{color}"><title>{escape(name)}: {count}</title></rect>'
        )
        if count:
            body.append(
                f'<text x="{middle:.1f}" y="{TOP + PLOT_H - height - 5:.1f}" '
                f'text-anchor="middle" fill="#111827">{count:,}</text>'
            )
        body.append(
            f'<text x="{middle:.1f}" y="{TOP + PLOT_H + 18}" text-anchor="middle" '
            f'fill="#4b5563">{escape(name)}</text>'
        )
    return _frame(title, x_label, y_label, body)
