"""The scale figures as SVG charts against the corpus size, N on a log scale.

Each chart draws the measured curves, solid, and for each the curve a sound design would give,
dashed, anchored at the smallest size: flat for the cost of a query, its latency, a worker's
memory and start-up (work proportional to the candidates, not the corpus), linear for the
index on disk (it holds every document). A measured curve that leaves its dashed one is the
design growing with N. Drawn by code so a run rewrites them; the page ``docs/scale.md`` shows
them. Colours and scales follow :mod:`services.green_agent.load.svg_charts`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from html import escape
from pathlib import Path
from typing import Any

from services.common.files import atomic_write_text
from services.green_agent.load.svg_charts import label, nice_ticks

WIDTH, HEIGHT = 720, 320
LEFT, RIGHT, TOP, BOTTOM = 64, 16, 40, 50
PLOT_W, PLOT_H = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
COLOURS = ("#2563eb", "#dc2626", "#059669", "#d97706", "#7c3aed", "#0891b2")
CHAR_W = 6.6

Record = dict[str, Any]


@dataclass(frozen=True, slots=True)
class Curve:
    """One measured line: its legend name, the field it plots, the mode, how it should grow."""

    name: str
    field: str
    mode: str
    sound: Callable[[float, float, float], float]  # (n, n0, y0) -> y of a sound design


def flat(n: float, n0: float, y0: float) -> float:
    """A sound design's cost that does not grow with N."""
    return y0


def linear(n: float, n0: float, y0: float) -> float:
    """What grows with every document (the index on disk)."""
    return y0 * n / n0


#: Room left and right of the outermost sizes, as a share of the plot's width.
X_PAD = 0.05


def _x(n: float, low: float, high: float) -> float:
    span = math.log10(high) - math.log10(low) or 1.0
    share = (math.log10(n) - math.log10(low)) / span
    return LEFT + PLOT_W * (X_PAD + (1 - 2 * X_PAD) * share)


def _points(records: Sequence[Record], curve: Curve) -> list[tuple[float, float]]:
    rows = sorted(
        (r for r in records if r["mode"] == curve.mode and r.get(curve.field) is not None),
        key=lambda r: r["documents"],
    )
    return [(float(r["documents"]), float(r[curve.field])) for r in rows]


def chart(title: str, y_label: str, records: Sequence[Record], curves: Sequence[Curve]) -> str:
    """An ``<svg>`` of ``curves`` over the sizes in ``records``, each with its sound-design line."""
    lines = [(c, _points(records, c)) for c in curves]
    sizes = sorted({float(r["documents"]) for r in records}) or [1.0]
    low, high = sizes[0], sizes[-1] if sizes[-1] > sizes[0] else sizes[0] * 10
    expected = [
        [(n, c.sound(n, pts[0][0], pts[0][1])) for n in sizes] if pts else [] for c, pts in lines
    ]
    values = [y for _, pts in lines for _, y in pts] + [y for e in expected for _, y in e]
    ticks = nice_ticks(max(values, default=1.0))
    top = ticks[-1] or 1.0

    def at(n: float, y: float) -> str:
        return f"{_x(n, low, high):.1f},{TOP + PLOT_H * (1 - y / top):.1f}"

    body = [
        f'<svg viewBox="0 0 {WIDTH} {HEIGHT}" width="{WIDTH}" role="img" font-size="12" '
        'xmlns="http://www.w3.org/2000/svg" font-family="sans-serif">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{WIDTH}" height="{HEIGHT}" fill="#ffffff"/>',
        f'<text x="{LEFT}" y="16" font-size="14" fill="#111827">{escape(title)}</text>',
    ]
    for tick in ticks:
        y = TOP + PLOT_H * (1 - tick / top)
        body.append(
            f'<line x1="{LEFT}" x2="{LEFT + PLOT_W}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e5e7eb"/>'
        )
        body.append(
            f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" fill="#4b5563">'
            f"{label(tick)}</text>"
        )
    decade = 10 ** math.floor(math.log10(low))
    while decade <= high * 1.0001:
        if decade >= low * 0.9999:
            x = _x(decade, low, high)
            body.append(
                f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{TOP + PLOT_H}" stroke="#f3f4f6"/>'
            )
        decade *= 10
    for n in sizes:
        body.append(
            f'<text x="{_x(n, low, high):.1f}" y="{TOP + PLOT_H + 16}" text-anchor="middle" '
            f'fill="#4b5563">{label(n)}</text>'
        )
    legend_x = float(LEFT)
    for i, ((curve, pts), sound) in enumerate(zip(lines, expected, strict=True)):
        colour = COLOURS[i % len(COLOURS)]
        if len(sound) > 1:
            body.append(
                f'<polyline points="{" ".join(at(*p) for p in sound)}" fill="none" '
                f'stroke="{colour}" stroke-width="1.5" stroke-dasharray="5 4" opacity="0.6"/>'
            )
        if len(pts) > 1:
            body.append(
                f'<polyline points="{" ".join(at(*p) for p in pts)}" fill="none" '
                f'stroke="{colour}" stroke-width="2"/>'
            )
        for p in pts:
            cx, cy = at(*p).split(",")
            body.append(f'<circle cx="{cx}" cy="{cy}" r="3" fill="{colour}"/>')
        body.append(
            f'<rect x="{legend_x:.1f}" y="{TOP - 16}" width="10" height="10" fill="{colour}"/>'
        )
        body.append(
            f'<text x="{legend_x + 14:.1f}" y="{TOP - 7}" fill="#111827">{escape(curve.name)}</text>'
        )
        legend_x += 24 + CHAR_W * len(curve.name)
    body += [
        f'<text x="{LEFT + PLOT_W / 2:.1f}" y="{HEIGHT - 8}" text-anchor="middle" '
        'fill="#374151">documents (log scale); dashed: a sound design</text>',
        f'<text transform="translate(14 {TOP + PLOT_H / 2:.1f}) rotate(-90)" '
        f'text-anchor="middle" fill="#374151">{escape(y_label)}</text>',
        "</svg>",
    ]
    return "\n".join(body) + "\n"


#: File name -> (title, y axis, curves): what docs/scale.md shows.
CHARTS: dict[str, tuple[str, str, tuple[Curve, ...]]] = {
    "scale-cpu.svg": (
        "MCP server CPU per query",
        "ms of CPU per query",
        (
            Curve("full", "cpu_ms_per_query", "full", flat),
            Curve("zero-shot", "cpu_ms_per_query", "zero-shot", flat),
        ),
    ),
    "scale-latency.svg": (
        "p99 latency, POST /search_nfcorpus",
        "ms",
        (
            Curve("full, 4 in flight", "p99_ms_c4", "full", flat),
            Curve("full, 1 in flight", "p99_ms_c1", "full", flat),
            Curve("zero-shot, 4 in flight", "p99_ms_c4", "zero-shot", flat),
        ),
    ),
    "scale-memory.svg": (
        "MCP worker RSS",
        "MB",
        (
            Curve("full, after start", "rss_mb_after_start", "full", flat),
            Curve("full, after queries", "rss_mb_after_queries", "full", flat),
            Curve("zero-shot, after start", "rss_mb_after_start", "zero-shot", flat),
        ),
    ),
    "scale-startup.svg": (
        "Start to ready (process start to /readyz 200)",
        "seconds",
        (
            Curve("full", "ready_s", "full", flat),
            Curve("zero-shot", "ready_s", "zero-shot", flat),
        ),
    ),
    "scale-index.svg": (
        "Index on disk",
        "MB",
        (
            Curve("full", "index_mb", "full", linear),
            Curve("zero-shot", "index_mb", "zero-shot", linear),
        ),
    ),
}


def write_charts(records: Sequence[Record], folder: Path) -> list[Path]:
    """Every chart of :data:`CHARTS` from ``records``, written whole into ``folder``."""
    written = []
    for name, (title, y_label, curves) in CHARTS.items():
        path = folder / name
        atomic_write_text(path, chart(title, y_label, records, curves))
        written.append(path)
    return written
