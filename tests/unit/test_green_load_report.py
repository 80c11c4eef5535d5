"""The load report's timeline and histogram, and its HTML page (no browser: see integration)."""

from __future__ import annotations

import re

import pytest
from rich.console import Console

from services.green_agent.cli import build_parser
from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.load.histogram import LatencyHistogram
from services.green_agent.load.html_page import render_load_html
from services.green_agent.load.outputs import load_table, with_thresholds
from services.green_agent.load.report import LoadReport
from services.green_agent.load.svg_charts import nice_ticks
from services.green_agent.load.thresholds import parse_budgets
from services.green_agent.load.timeline import (
    LATENCY_BINS,
    Timeline,
    bucket_width,
    histogram_stats,
    latency_bin,
    latency_bins,
)
from services.green_agent.settings import GreenSettings
from services.telemetry.metrics import LATENCY_BUCKETS
from tests.support.load_reports import report_of

T0 = 1000.0  # a perf_counter reading: only differences from the first start matter
HOSTILE = "<script>alert('x')</script> & <img src=x onerror=alert(1)>"


def _ok(started: float, latency: float) -> QueryOutcome:
    return QueryOutcome("q", latency, ["MED-1"], started_s=T0 + started)


def _failed(started: float, latency: float, reason: str = "timeout") -> QueryOutcome:
    return QueryOutcome("q", latency, None, reason, "no reply in time", started_s=T0 + started)


def _report(
    outcomes: list[QueryOutcome],
    wall_s: float,
    agent: str = "http://a",
    duration: float | None = None,
) -> LoadReport:
    return report_of(
        outcomes,
        dropped=0,
        wall_s=wall_s,
        agent=agent,
        protocol="1.0",
        duration_s=wall_s if duration is None else duration,
        concurrency=2,
        rate=None,
    )


@pytest.mark.parametrize(
    ("span_s", "width_s"),
    [(0.5, 1.0), (60.0, 1.0), (120.0, 1.0), (120.5, 2.0), (600.0, 10.0), (3660.0, 60.0)],
)
def test_buckets_widen_to_keep_at_most_120_points(span_s: float, width_s: float) -> None:
    assert bucket_width(span_s) == width_s


def test_outcomes_fall_in_the_bucket_where_they_ended() -> None:
    outcomes = [
        _ok(0.0, 0.2),  # ends 0.2 -> bucket 0
        _ok(0.5, 0.4),  # ends 0.9 -> bucket 0
        _ok(0.8, 0.4),  # started in bucket 0, ends 1.2 -> bucket 1
        _failed(1.0, 0.5),  # ends 1.5 -> bucket 1
        _ok(3.1, 0.2),  # ends 3.3 -> bucket 3; bucket 2 stays empty
        _ok(3.5, 0.9),  # ends 4.4: the 0.4 s tail joins bucket 3
    ]
    report = _report(outcomes, wall_s=4.4)
    points = report.timeline
    assert report.timeline_bucket_s == 1.0
    assert [p.start_s for p in points] == [0.0, 1.0, 2.0, 3.0]
    assert [p.span_s for p in points] == pytest.approx([1.0, 1.0, 1.0, 1.4])
    assert [(p.answered, p.failed) for p in points] == [(2, 0), (1, 1), (0, 0), (2, 0)]
    assert [p.throughput_rps for p in points] == pytest.approx([2.0, 1.0, 0.0, 2 / 1.4])
    assert [p.error_rps for p in points] == pytest.approx([0.0, 1.0, 0.0, 0.0])
    # Percentiles are read from the bucket's own histogram, over its answers only.
    assert points[0].latency == histogram_stats(LatencyHistogram.of([0.2, 0.4]))
    assert 0.2 <= points[0].latency.p50_s <= 0.2 * 1.01 and points[0].latency.max_s == 0.4
    assert points[2].latency.count == 0


def test_the_first_start_is_the_origin_and_a_late_end_widens_the_timeline() -> None:
    points = _report([_ok(0.0, 0.1), _ok(0.0, 2.6)], wall_s=1.0).timeline
    assert [(p.start_s, p.answered) for p in points] == [(0.0, 1), (1.0, 1)]
    assert points[-1].span_s == pytest.approx(1.6)
    assert _report([], wall_s=3.0).timeline == []


def test_a_run_longer_than_its_buckets_widens_them() -> None:
    # 200 s of answers, one every second: one-second buckets would make 200 points.
    report = _report([_ok(float(t), 0.5) for t in range(200)], wall_s=200.5)
    assert report.timeline_bucket_s == 2.0 and len(report.timeline) == 100
    assert sum(p.answered for p in report.timeline) == 200
    assert all(p.answered == 2 for p in report.timeline)


def test_timelines_of_several_widths_merge_into_the_widest() -> None:
    short = _report([_ok(float(t), 0.5) for t in range(10)], wall_s=10.0)
    long = _report([_ok(float(t), 0.5) for t in range(200)], wall_s=200.5)
    timeline = Timeline.of_points(short.timeline_bucket_s, short.timeline)
    timeline.merge(Timeline.of_points(long.timeline_bucket_s, long.timeline))
    points = timeline.points(200.5)
    assert timeline.width == 2.0 and len(points) == 100
    assert [p.answered for p in points[:6]] == [4, 4, 4, 4, 4, 2]
    assert sum(p.answered for p in points) == 210


def test_the_timeline_counts_the_requests_in_flight() -> None:
    # Two requests over the first second, one over half of the second.
    points = _report([_ok(0.0, 1.0), _ok(0.0, 1.5)], wall_s=2.0).timeline
    assert [p.in_flight for p in points] == pytest.approx([2.0, 0.5])


def test_histogram_stats_read_the_tail_and_the_exact_extremes() -> None:
    histogram = LatencyHistogram.of([0.001 * v for v in range(1, 1001)])
    stats = histogram_stats(histogram)
    assert (stats.min_s, stats.max_s) == (0.001, 1.0)
    # Nearest rank, read as its bucket's upper edge: at most RESOLUTION above, never below.
    for got, exact in ((stats.p90_s, 0.9), (stats.p999_s, 0.999)):
        assert exact <= got <= exact * (1 + histogram.resolution)
    assert histogram_stats(LatencyHistogram()).min_s == 0.0


def test_the_table_and_the_page_show_the_tail_and_the_minimum() -> None:
    report = _report([_ok(0.1 * i, 0.01 * (i + 1)) for i in range(20)], 2.0)
    page = render_load_html(report)
    for name in ("min latency", "p90 latency", "p99.9 latency"):
        assert name in page
    console = Console(width=200, record=True)
    console.print(load_table(report))
    header = console.export_text()
    assert all(column in header for column in ("min", "p90", "p99.9"))


def test_histogram_bins_follow_the_prometheus_edges() -> None:
    counts = [0] * LATENCY_BINS
    for seconds in (0.0005, 0.001, 0.0011, 0.0025, 0.04, 0.04, 99.0):
        counts[latency_bin(seconds)] += 1
    bins = latency_bins(counts)
    assert len(bins) == len(LATENCY_BUCKETS) + 1
    assert [b.upper_ms for b in bins[:4]] == [1.0, 2.5, 5.0, 10.0]
    assert bins[0].lower_ms == 0.0 and bins[-1].upper_ms is None
    assert bins[-1].lower_ms == LATENCY_BUCKETS[-1] * 1000
    filled = {b.upper_ms: b.count for b in bins if b.count}
    # An edge value counts in the bin it closes, as Prometheus's `le` does.
    assert filled == {1.0: 2, 2.5: 2, 50.0: 2, None: 1}


def test_the_report_carries_timeline_and_histogram_of_the_answers() -> None:
    report = _report([_ok(0.0, 0.02), _ok(0.1, 0.03), _failed(0.2, 5.0)], wall_s=5.2)
    assert report.timeline_bucket_s == 1.0
    assert sum(p.answered for p in report.timeline) == 2
    assert sum(p.failed for p in report.timeline) == 1
    assert sum(b.count for b in report.latency_histogram) == 2  # failures are not timed in it
    assert report.errors_by_reason == {"timeout": 1}
    assert LoadReport.model_validate_json(report.model_dump_json()) == report


def test_remote_text_is_escaped_everywhere() -> None:
    outcomes = [_ok(0.0, 0.05), QueryOutcome("q", 0.1, None, HOSTILE, HOSTILE, started_s=T0)]
    page = render_load_html(_report(outcomes, wall_s=1.0, agent=f"http://a/{HOSTILE}"))
    assert "<script" not in page and "<img" not in page
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt; &amp; &lt;img" in page
    assert "<td>&lt;script&gt;" in page  # the reason, in the failures table


def test_the_page_is_self_contained() -> None:
    page = render_load_html(_report([_ok(t / 10, 0.05) for t in range(30)], wall_s=3.0))
    # throughput; p50, p90, p95, p99; in flight; the histogram
    assert page.count("<svg") == 4 and page.count("<polyline") == 6
    assert 'http-equiv="refresh"' not in page  # a finished run's page stays as it is
    assert not re.search(r"<script|<link|<img|@import|url\(|\bsrc=|\bhref=", page)
    # The only URL is the SVG namespace (an identifier, never fetched) and the agent's.
    assert set(re.findall(r"https?://[^\s\"<]+", page)) == {
        "http://www.w3.org/2000/svg",
        "http://a",
    }
    assert "no failures" in page


def test_an_empty_run_renders() -> None:
    page = render_load_html(_report([], wall_s=2.0))
    assert page.count("<svg") == 4
    assert page.count("no requests") == 2 and page.count("no answers") == 2
    assert "no failures" in page
    assert "<polyline" not in page and "nan" not in page.lower()


def test_a_run_without_answers_lists_its_failures() -> None:
    outcomes = [_failed(0.0, 0.01, "transport"), _failed(0.1, 0.01, "transport")]
    page = render_load_html(_report(outcomes, wall_s=1.0))
    assert "Failures (2)" in page and "<td>transport</td>" in page
    assert page.count("no answers") == 2 and "no failures" not in page
    assert '<div class="value">–</div><div class="name">p50 latency</div>' in page


@pytest.mark.parametrize(
    ("high", "ticks"),
    [
        (0.0, [0, 0.2, 0.4, 0.6, 0.8, 1.0]),
        (23.0, [0, 5, 10, 15, 20, 25]),
        (400, [0, 100, 200, 300, 400]),
    ],
)
def test_axis_ticks_are_round(high: float, ticks: list[float]) -> None:
    assert nice_ticks(high) == pytest.approx(ticks)


def test_load_takes_an_html_path() -> None:
    args = ["load", "--agent", "http://a", "--concurrency", "1", "--duration", "1"]
    parsed = build_parser(GreenSettings()).parse_args([*args, "--html", "out/load.html"])
    assert str(parsed.html) == "out/load.html"
    assert build_parser(GreenSettings()).parse_args(args).html is None


def test_a_live_page_reloads_itself_and_says_who_is_still_running() -> None:
    report = _report([_ok(t / 10, 0.05) for t in range(30)], wall_s=3.0)
    workers = [report.workers[0].model_copy(update={"status": "running"})]
    live = report.model_copy(
        update={"complete": False, "waiting_for": [0, 1], "report_every_s": 2.0, "workers": workers}
    )
    page = render_load_html(live)
    assert '<meta http-equiv="refresh" content="2">' in page
    assert "Live: waiting for workers 0, 1." in page and "workers 0 still running" in page
    assert "<td>running</td>" in page
    assert "so far: the run is not over" in render_load_html(
        live.model_copy(
            update={"thresholds": with_thresholds(live, parse_budgets(["p99<1s"])).thresholds}
        )
    )
    cut = report.model_copy(update={"cut_short": [1]})
    assert "Cut short: workers 1" in render_load_html(cut)
