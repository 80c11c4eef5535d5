"""The load report as one self-contained HTML page, for a person to read.

Inline CSS and inline SVG only (:mod:`services.green_agent.load.svg_charts`): no script, font, style
sheet or image is fetched, so the file can be mailed, archived as a CI artifact and opened
offline. A collector's page of a run still going (its report not ``complete``) reloads itself
every few seconds, as often as the generators hand in their figures, with a meta refresh (no
script); a finished run's page, saved or served, does not. Every text from the run is escaped: agent URLs, reasons and error messages come from
remote servers.
"""

from __future__ import annotations

from html import escape
from pathlib import Path

from services.common.files import atomic_write_text
from services.green_agent.evaluation.report import LATENCY_COLUMNS, latency_columns
from services.green_agent.load.report import LoadReport, pace_setting, workload_line
from services.green_agent.load.stages import stage_label, warmup_line
from services.green_agent.load.svg_charts import Series, bar_chart, label, line_chart
from services.green_agent.load.thresholds import parse_budget
from services.green_agent.load.timeline import LatencyBin

GREEN, RED, BLUE, AMBER, PURPLE = "#16a34a", "#dc2626", "#2563eb", "#d97706", "#7c3aed"
THROUGHPUT_TITLE = "Throughput over time"
LATENCY_TITLE = "Latency percentiles over time"
IN_FLIGHT_TITLE = "Requests in flight over time"
#: How often a live page reloads when its report does not say how often figures come.
REFRESH_S = 5.0
HISTOGRAM_TITLE = "Latency histogram of the answers"
MIN_BINS = 8  # a histogram this narrow at least, so one busy bin does not fill the chart

CSS = """
body { margin: 0; background: #f3f4f6; color: #111827;
  font: 15px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "DejaVu Sans", sans-serif; }
main { max-width: 1040px; margin: 0 auto; padding: 24px 28px 40px; }
h1 { font-size: 24px; margin: 0 0 4px; word-break: break-all; }
h2 { font-size: 18px; margin: 0 0 8px; }
.setting { color: #4b5563; margin: 0 0 18px; }
.stats { display: grid; grid-template-columns: repeat(5, 1fr); gap: 10px; margin-top: 10px; }
.stats.latencies { grid-template-columns: repeat(4, 1fr); }
@media (max-width: 700px) { .stats, .stats.latencies { grid-template-columns: repeat(2, 1fr); } }
.stat { background: #fff; border-radius: 8px; padding: 10px 14px; border-top: 3px solid #9ca3af; }
.stat .value { font-size: 22px; font-weight: 600; white-space: nowrap; }
.stat .name { color: #6b7280; font-size: 13px; }
.stat.good { border-top-color: #16a34a; } .stat.bad { border-top-color: #dc2626; }
.stat.latency { border-top-color: #2563eb; }
section { background: #fff; border-radius: 8px; padding: 16px 18px; margin-top: 18px; }
table { border-collapse: collapse; min-width: 60%; }
th, td { text-align: left; padding: 6px 10px; border-bottom: 1px solid #e5e7eb; }
td.n, th.n { text-align: right; font-variant-numeric: tabular-nums; }
code { display: block; white-space: pre-wrap; word-break: break-all; background: #f9fafb;
  border: 1px solid #e5e7eb; border-radius: 6px; padding: 6px 10px; margin: 6px 0;
  font: 13px/1.4 ui-monospace, "DejaVu Sans Mono", monospace; }
.empty { color: #6b7280; font-style: italic; }
.bound, td.breached { color: #dc2626; } td.passed { color: #16a34a; }
.incomplete { background: #fef3c7; border-left: 4px solid #d97706; padding: 8px 12px; }
footer { color: #6b7280; font-size: 13px; margin-top: 18px; }
"""


def _duration(seconds: float) -> str:
    ms = seconds * 1000
    return f"{ms:.1f} ms" if ms < 1000 else f"{seconds:.2f} s"


def _headline(report: LoadReport) -> str:
    setting = (
        f"A2A {report.protocol} · {report.loop} loop, {pace_setting(report)} · "
        f"{report.duration_s:g} s of load "
        f"(wall {report.wall_s:.1f} s) · {report.timeline_bucket_s:g} s buckets"
    )
    lat = report.latency
    answered = lat.count > 0

    def stat(name: str, value: str, kind: str = "") -> str:
        return (
            f'<div class="stat {kind}"><div class="value">{escape(value)}</div>'
            f'<div class="name">{escape(name)}</div></div>'
        )

    counts = [
        stat("requests", f"{report.requests:,}"),
        stat("answered", f"{report.ok:,}", "good"),
        stat("failed", f"{report.errors:,}", "bad" if report.errors else "good"),
        stat("dropped", f"{report.dropped:,}", "bad" if report.dropped else "good"),
        stat("throughput (answered)", f"{report.throughput_rps:.1f}/s", "good"),
    ]
    latencies = [
        stat(f"{name} latency", _duration(value) if answered else "–", "latency")
        for name, value in (
            *zip(LATENCY_COLUMNS, latency_columns(lat), strict=True),
            ("mean", lat.mean_s),
        )
    ]
    return (
        f"<h1>Load test of {escape(report.agent)}</h1>\n"
        f"{_incomplete(report)}"
        f'<p class="setting">{escape(setting)}</p>\n'
        f'<p class="setting">{escape(workload_line(report))}</p>\n'
        f'<div class="stats">{"".join(counts)}</div>\n'
        f'<div class="stats latencies">{"".join(latencies)}</div>'
    )


def _incomplete(report: LoadReport) -> str:
    """The note on a run still going, or one with workers cut short (empty otherwise)."""
    notes = []
    if report.cut_short:
        silent = ", ".join(str(w) for w in report.cut_short)
        notes.append(
            f'<p class="incomplete"><strong>Cut short: workers {escape(silent)}</strong> fell '
            "silent during the run; their figures end at the last they handed in.</p>\n"
        )
    if not report.complete:
        waiting = ", ".join(str(w) for w in report.waiting_for)
        running = ", ".join(str(w.worker) for w in report.workers if w.status == "running")
        so_far = f" (workers {escape(running)} still running)" if running else ""
        notes.append(
            f'<p class="incomplete"><strong>Live: waiting for workers {escape(waiting)}.'
            f"</strong> The figures are those handed in so far{so_far}; this page reloads "
            f"every {_refresh_s(report):g} s.</p>\n"
        )
    return "".join(notes)


def _refresh_s(report: LoadReport) -> float:
    return report.report_every_s or REFRESH_S


def _budgets(report: LoadReport) -> str:
    """The run's budgets, each with its figure and verdict (nothing when it was given none)."""
    if not report.thresholds:
        return ""
    verdicts = {
        True: ("passed", "passed"),
        False: ("BREACHED", "breached"),
        None: ("not judged", ""),
    }
    rows = []
    for t in report.thresholds:
        verdict, kind = verdicts[t.passed]
        shown = parse_budget(t.budget).show(t.measured) if t.passed is not None else "-"
        rows.append(
            f'<tr><td>{escape(t.budget)}</td><td class="n">{escape(shown)}</td>'
            f'<td class="{kind}">{verdict}</td></tr>'
        )
    head = '<tr><th>budget</th><th class="n">measured</th><th>verdict</th></tr>'
    so_far = "" if report.complete else " so far: the run is not over"
    return (
        f"<section><h2>Budgets ({len(report.breached)} breached{so_far})</h2>\n"
        f"<table><thead>{head}</thead>\n<tbody>{''.join(rows)}</tbody></table></section>"
    )


def _charts_over_time(report: LoadReport) -> str:
    points = report.timeline
    x_max = points[-1].start_s + points[-1].span_s if points else report.wall_s
    x_label = (
        f"seconds since the start ({report.timeline_bucket_s:g} s buckets, "
        "each request counted when it ended)"
    )

    def series(name: str, color: str, values: list[float | None]) -> Series:
        middles = (p.start_s + p.span_s / 2 for p in points)
        return Series(name, color, list(zip(middles, values, strict=True)))

    rates = [series("answered/s", GREEN, [p.throughput_rps for p in points])]
    if report.errors:
        rates.append(series("failed/s", RED, [p.error_rps for p in points]))
    throughput = line_chart(
        THROUGHPUT_TITLE,
        rates,
        x_max=x_max,
        x_label=x_label,
        y_label="requests/s",
        empty="no requests",
    )
    # A bucket without answers has no percentile: a gap in the line, not a drop to 0 ms.
    answered = [p.latency if p.answered else None for p in points]
    latency = line_chart(
        LATENCY_TITLE,
        [
            series("p50", BLUE, [s.p50_s * 1000 if s else None for s in answered]),
            series("p90", GREEN, [s.p90_s * 1000 if s else None for s in answered]),
            series("p95", AMBER, [s.p95_s * 1000 if s else None for s in answered]),
            series("p99", RED, [s.p99_s * 1000 if s else None for s in answered]),
        ],
        x_max=x_max,
        x_label=x_label,
        y_label="latency (ms)",
        empty="no answers",
    )
    in_flight = line_chart(
        IN_FLIGHT_TITLE,
        [series("in flight", PURPLE, [p.in_flight for p in points])],
        x_max=x_max,
        x_label=x_label.replace("each request counted when it ended", "the mean over each"),
        y_label="requests",
        empty="no requests",
    )
    return (
        f"<section><h2>{THROUGHPUT_TITLE}</h2>\n{throughput}</section>\n"
        f"<section><h2>{LATENCY_TITLE}</h2>\n{latency}</section>\n"
        f"<section><h2>{IN_FLIGHT_TITLE}</h2>\n{in_flight}</section>"
    )


def _shown_bins(bins: list[LatencyBin]) -> list[LatencyBin]:
    """The bins from the first to the last with answers, widened to :data:`MIN_BINS`."""
    used = [i for i, b in enumerate(bins) if b.count]
    low, high = (used[0], used[-1]) if used else (0, len(bins) - 1)
    while high - low + 1 < MIN_BINS and (low > 0 or high < len(bins) - 1):
        high = min(high + 1, len(bins) - 1)
        if high - low + 1 < MIN_BINS:
            low = max(low - 1, 0)
    return bins[low : high + 1]


def _histogram(report: LoadReport) -> str:
    bins = _shown_bins(report.latency_histogram)
    names = [
        f"≤{label(b.upper_ms)}" if b.upper_ms is not None else f">{label(b.lower_ms)}" for b in bins
    ]
    chart = bar_chart(
        HISTOGRAM_TITLE,
        names,
        [b.count for b in bins],
        color=PURPLE,
        x_label="latency, ms (each bar: answers above the previous edge, up to its own)",
        y_label="answers",
        empty="no answers",
    )
    return f"<section><h2>{HISTOGRAM_TITLE}</h2>\n{chart}</section>"


def _failures(report: LoadReport) -> str:
    if not report.errors_by_reason:
        return '<section><h2>Failures</h2>\n<p class="empty">no failures</p></section>'
    rows = "\n".join(
        f'<tr><td>{escape(reason)}</td><td class="n">{count:,}</td>'
        f'<td class="n">{count / report.requests:.1%}</td></tr>'
        for reason, count in sorted(report.errors_by_reason.items(), key=lambda r: (-r[1], r[0]))
    )
    samples = "\n".join(f"<code>{escape(sample)}</code>" for sample in report.error_samples)
    error_latency = report.error_latency
    return (
        f"<section><h2>Failures ({report.errors:,})</h2>\n"
        '<table><thead><tr><th>reason</th><th class="n">count</th>'
        f'<th class="n">share of requests</th></tr></thead>\n<tbody>{rows}</tbody></table>\n'
        f"<p>Time to fail: p50 {_duration(error_latency.p50_s)}, "
        f"max {_duration(error_latency.max_s)}.</p>\n"
        f"<h2>Error samples</h2>\n{samples}</section>"
    )


def _stages(report: LoadReport) -> str:
    """The stages, each with what it asked and achieved, and the warm-up left out of the rest."""
    if len(report.stages) <= 1 and report.warmup is None:
        return ""
    open_loop = report.loop == "open"
    warmup = ""
    if report.warmup is not None and report.stages:
        warmup = f"<p>{escape(warmup_line(report.warmup, report.stages[0].loop))}.</p>\n"

    def asked(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    rows = "\n".join(
        f'<tr><td class="n">{s.stage}</td><td>{escape(stage_label(s))}</td>'
        f'<td class="n">{s.ran_s:.1f}</td>'
        f'<td class="n">{asked(s.asked_rate if open_loop else s.asked_concurrency)}</td>'
        f'<td class="n">{s.achieved_rate:.1f}</td><td class="n">{s.mean_concurrency:.1f}</td>'
        f'<td class="n">{s.started:,}</td><td class="n">{s.ok:,}</td>'
        f'<td class="n">{s.errors:,}</td><td class="n">{s.dropped:,}</td>'
        f'<td class="n">{_duration(s.latency.p50_s) if s.ok else "–"}</td>'
        f'<td class="n">{_duration(s.latency.p99_s) if s.ok else "–"}</td></tr>'
        for s in report.stages
    )
    names = ("asked/s", "started/s") if open_loop else ("asked in flight", "completed/s")
    head = "".join(
        f'<th class="{"" if name == "shape" else "n"}">{name}</th>'
        for name in (
            "stage", "shape", "seconds", *names, "in flight", "sent", "ok", "errors",
            "dropped", "p50", "p99",
        )
    )  # fmt: skip
    return (
        f"<section><h2>Stages ({len(report.stages)})</h2>\n{warmup}"
        f"<table><thead><tr>{head}</tr></thead>\n<tbody>{rows}</tbody></table>\n"
        "<p>Each stage's outcomes are those of the requests it started; in flight is the mean "
        "number of requests outstanding over the stage.</p></section>"
    )


def _generators(report: LoadReport) -> str:
    """Each generator's figures, and a warning when one was the bottleneck."""
    warning = ""
    if report.generator_bound:
        reasons = "".join(f"<li>{escape(r)}</li>" for r in report.generator_bound)
        warning = (
            '<p class="bound"><b>The load generators may have set the pace, not the agent:</b>'
            f"</p><ul>{reasons}</ul>\n"
        )
    rows = "\n".join(
        f'<tr><td class="n">{w.worker}</td><td>{w.status}</td><td class="n">{w.requests:,}</td>'
        f'<td class="n">{w.ok:,}</td><td class="n">{w.errors:,}</td>'
        f'<td class="n">{w.dropped:,}</td>'
        f'<td class="n">{"-" if w.asked_rate is None else f"{w.asked_rate:.1f}"}</td>'
        f'<td class="n">{w.started_rate:.1f}</td>'
        f'<td class="n">{_duration(w.latency.p50_s)}</td>'
        f'<td class="n">{_duration(w.latency.p99_s)}</td>'
        f'<td class="n">{"-" if w.cpu_ms_per_request is None else f"{w.cpu_ms_per_request:.2f} ms"}</td>'
        f'<td class="n">{"-" if w.core_share is None else f"{w.core_share:.0%}"}</td></tr>'
        for w in report.workers
    )
    head = "".join(
        f'<th class="n">{name}</th>'
        for name in (
            "worker", "status", "sent", "ok", "errors", "dropped", "asked/s", "started/s", "p50",
            "p99", "CPU per request", "of a core",
        )
    )  # fmt: skip
    return (
        f"<section><h2>Generators ({len(report.workers)})</h2>\n{warning}"
        f"<table><thead><tr>{head}</tr></thead>\n<tbody>{rows}</tbody></table>\n"
        "<p>Percentiles of the whole run come from the generators' merged histograms (1% "
        "resolution), not from their own percentiles.</p></section>"
    )


def render_load_html(report: LoadReport) -> str:
    """Render ``report`` as a self-contained HTML page.

    Args:
        report: A load run's report.

    Returns:
        The page: headline numbers, throughput and latency percentiles over time, the latency
        histogram, and the failures by reason with samples of their messages.

    """
    return "\n".join(
        [
            "<!DOCTYPE html>",
            '<html lang="en"><head><meta charset="utf-8">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            ""
            if report.complete
            else f'<meta http-equiv="refresh" content="{_refresh_s(report):g}">',
            f"<title>Load test of {escape(report.agent)}"
            f"{'' if report.complete else ' (incomplete)'}</title>",
            f"<style>{CSS}</style></head>",
            "<body><main>",
            _headline(report),
            _stages(report),
            _budgets(report),
            _charts_over_time(report),
            _histogram(report),
            _failures(report),
            _generators(report),
            "<footer>Latencies and percentiles are those of the answers; failures are counted "
            "apart. Histogram edges are the Prometheus histogram buckets of the services, so "
            "the shares agree with their dashboards.</footer>",
            "</main></body></html>",
            "",
        ]
    )


def write_load_html(report: LoadReport, path: Path) -> None:
    """Write :func:`render_load_html` of ``report`` to ``path`` whole, creating its folder."""
    atomic_write_text(path, render_load_html(report))
