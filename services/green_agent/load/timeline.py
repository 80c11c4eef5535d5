"""A load run over time and by latency: its timeline and the histograms of its answers.

The timeline puts every outcome in the bucket where it *ended* (``started_s + latency_s``): a
bucket's throughput is then the answers completed per second, and its percentiles those of the
answers completed in it, which is what Prometheus shows from the servers' histograms
(``rate()``, ``histogram_quantile()``) for the same window. Each bucket keeps its answers'
mergeable histogram (:mod:`services.green_agent.load.histogram`), so the timelines of several
generators merge bucket by bucket. The display histogram uses the bucket edges of the services'
Prometheus histograms (:data:`services.telemetry.metrics.LATENCY_BUCKETS`), so a share of
answers under an edge reads the same in the report and in Prometheus.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from pydantic import BaseModel

from services.green_agent.evaluation.report import LatencyStats
from services.green_agent.load.histogram import LatencyHistogram, merge_all
from services.telemetry.metrics import LATENCY_BUCKETS

#: Bucket widths in seconds, smallest first; a run gets the smallest that keeps it readable.
#: Each divides the next: a generator widens its buckets as its run grows longer than it
#: planned (a run stopped by a signal has no planned end), and timelines of several widths
#: merge into the widest, each of its buckets whole buckets of the others.
NICE_WIDTHS_S = (1.0, 2.0, 10.0, 20.0, 60.0, 120.0, 600.0, 1200.0, 3600.0)
#: Most points a timeline has (one a second up to two minutes).
MAX_POINTS = 120


def histogram_stats(histogram: LatencyHistogram) -> LatencyStats:
    """Count, mean, the exact extremes, and percentiles (bucket upper edges, at most 1% high)."""
    return LatencyStats(
        count=histogram.count,
        mean_s=histogram.mean_s,
        min_s=histogram.min_s or 0.0,
        p50_s=histogram.quantile(0.50),
        p90_s=histogram.quantile(0.90),
        p95_s=histogram.quantile(0.95),
        p99_s=histogram.quantile(0.99),
        p999_s=histogram.quantile(0.999),
        max_s=histogram.max_s or 0.0,
    )


class TimelinePoint(BaseModel):
    """Outcomes that ended in one time bucket of the run (``latencies``: its answers')."""

    start_s: float
    span_s: float
    answered: int
    failed: int
    throughput_rps: float
    error_rps: float
    latency: LatencyStats
    latencies: LatencyHistogram
    # The mean number of requests in flight over the bucket (their time in it over its span);
    # 0 in a report written before it was recorded.
    in_flight: float = 0.0


def timeline_point(
    start_s: float, span_s: float, failed: int, latencies: LatencyHistogram, busy_s: float = 0.0
) -> TimelinePoint:
    """One bucket's point: its rates over ``span_s``, its answers' latency, its time in flight."""
    return TimelinePoint(
        start_s=start_s,
        span_s=span_s,
        answered=latencies.count,
        failed=failed,
        throughput_rps=latencies.count / span_s,
        error_rps=failed / span_s,
        latency=histogram_stats(latencies),
        latencies=latencies,
        in_flight=busy_s / span_s if span_s > 0 else 0.0,
    )


class LatencyBin(BaseModel):
    """Answers with ``lower_ms < latency <= upper_ms`` (``upper_ms`` None: no upper bound)."""

    lower_ms: float
    upper_ms: float | None
    count: int


def bucket_width(span_s: float) -> float:
    """Return the smallest nice width giving at most :data:`MAX_POINTS` buckets over ``span_s``."""
    width = NICE_WIDTHS_S[0]
    while span_s / width > MAX_POINTS:
        width = wider(width)
    return width


def wider(width: float) -> float:
    """The next width after ``width``: a whole multiple of it."""
    for nice in NICE_WIDTHS_S:
        if nice > width:
            return nice
    return width * 2


def latency_bin(seconds: float) -> int:
    """The index of the display bin holding ``seconds``: an edge counts in the bin below it."""
    return bisect.bisect_left(LATENCY_BUCKETS, seconds)


#: Display bins: one below each edge of :data:`LATENCY_BUCKETS`, and one above the last.
LATENCY_BINS = len(LATENCY_BUCKETS) + 1


def latency_bins(counts: Sequence[int]) -> list[LatencyBin]:
    """The display bins with ``counts`` (one a bin, :data:`LATENCY_BINS` of them)."""
    # Rounded so an edge reads as its decimal milliseconds, not as 2.5000000000000004.
    edges_ms = [round(edge * 1000, 6) for edge in LATENCY_BUCKETS]
    lowers = [0.0, *edges_ms]
    uppers: list[float | None] = [*edges_ms, None]
    return [
        LatencyBin(lower_ms=low, upper_ms=high, count=n)
        for low, high, n in zip(lowers, uppers, counts, strict=True)
    ]


def merged_timeline(
    timelines: Sequence[tuple[float, Sequence[TimelinePoint]]],
) -> tuple[float, list[TimelinePoint]]:
    """Timelines, each with its bucket width, as one in the widest of their widths.

    Every width divides the widest (:data:`NICE_WIDTHS_S`): a bucket of the merge holds whole
    buckets of each timeline, and its span is the longest any timeline covers in it.
    """
    width = max((w for w, _ in timelines), default=NICE_WIDTHS_S[0])
    merged: dict[int, list[tuple[int, TimelinePoint]]] = {}
    for source, (_, points) in enumerate(timelines):
        for point in points:
            # The start is a whole number of the timeline's widths: round, not floor, the ratio.
            index = int(point.start_s / width + 1e-9)
            merged.setdefault(index, []).append((source, point))
    result = []
    for index in sorted(merged):
        here = [p for _, p in merged[index]]
        spans: dict[int, float] = {}
        for source, point in merged[index]:
            spans[source] = spans.get(source, 0.0) + point.span_s
        result.append(
            timeline_point(
                index * width,
                max(spans.values()),
                sum(p.failed for p in here),
                merge_all(p.latencies for p in here),
                math.fsum(p.in_flight * p.span_s for p in here),
            )
        )
    return width, result
