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

from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.evaluation.report import LatencyStats
from services.green_agent.load.histogram import LatencyHistogram, merge_all
from services.telemetry.metrics import LATENCY_BUCKETS

#: Bucket widths in seconds, smallest first; a run gets the smallest that keeps it readable.
NICE_WIDTHS_S = (1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0)
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


def timeline_point(
    start_s: float, span_s: float, failed: int, latencies: LatencyHistogram
) -> TimelinePoint:
    """One bucket's point: its rates over ``span_s`` and its answers' latency."""
    return TimelinePoint(
        start_s=start_s,
        span_s=span_s,
        answered=latencies.count,
        failed=failed,
        throughput_rps=latencies.count / span_s,
        error_rps=failed / span_s,
        latency=histogram_stats(latencies),
        latencies=latencies,
    )


class LatencyBin(BaseModel):
    """Answers with ``lower_ms < latency <= upper_ms`` (``upper_ms`` None: no upper bound)."""

    lower_ms: float
    upper_ms: float | None
    count: int


def bucket_width(span_s: float) -> float:
    """Return the smallest nice width giving at most :data:`MAX_POINTS` buckets over ``span_s``."""
    for width in NICE_WIDTHS_S:
        if span_s / width <= MAX_POINTS:
            return width
    return float(math.ceil(span_s / MAX_POINTS))


def build_timeline(
    outcomes: Sequence[QueryOutcome], wall_s: float, width_s: float | None = None
) -> tuple[float, list[TimelinePoint]]:
    """Bucket ``outcomes`` by the time they ended, counted from the first start.

    The first request starts as the run starts (every worker at once, or the schedule's first
    slot), so the earliest ``started_s`` stands for the start of the run. The last bucket also
    takes the tail shorter than one width (the drain after the duration): a bucket of a few
    milliseconds would turn one late answer into a throughput spike.

    Args:
        outcomes: Every outcome of the run.
        wall_s: The run's wall time; the timeline covers it, or the last end if that is later.
        width_s: The bucket width (default: the nicest for the span): the workers of one run
            take it from the duration they were asked for, so their timelines merge by bucket.

    Returns:
        The bucket width in seconds and one point a bucket (none when there are no outcomes).

    """
    if not outcomes:
        return width_s or bucket_width(wall_s), []
    origin = min(o.started_s for o in outcomes)
    ends = [o.started_s + o.latency_s - origin for o in outcomes]
    span = max(wall_s, *ends)
    width = width_s or bucket_width(span)
    count = max(1, math.floor(span / width))
    answered = [LatencyHistogram() for _ in range(count)]
    failed = [0] * count
    for outcome, end in zip(outcomes, ends, strict=True):
        index = min(int(end // width), count - 1)
        if outcome.ok:
            answered[index].record(outcome.latency_s)
        else:
            failed[index] += 1
    points = []
    for index in range(count):
        start = index * width
        covered = span - start if index == count - 1 else width
        points.append(timeline_point(start, covered, failed[index], answered[index]))
    return width, points


def latency_histogram(latencies_s: Sequence[float]) -> list[LatencyBin]:
    """Count latencies (seconds) into the bins between :data:`LATENCY_BUCKETS`' edges.

    A latency equal to an edge counts in the bin below it, as Prometheus's ``le`` does.
    """
    counts = [0] * (len(LATENCY_BUCKETS) + 1)
    for latency in latencies_s:
        counts[bisect.bisect_left(LATENCY_BUCKETS, latency)] += 1
    # Rounded so an edge reads as its decimal milliseconds, not as 2.5000000000000004.
    edges_ms = [round(edge * 1000, 6) for edge in LATENCY_BUCKETS]
    lowers = [0.0, *edges_ms]
    uppers: list[float | None] = [*edges_ms, None]
    return [
        LatencyBin(lower_ms=low, upper_ms=high, count=n)
        for low, high, n in zip(lowers, uppers, counts, strict=True)
    ]


def merged_timeline(
    timelines: Sequence[Sequence[TimelinePoint]], width: float
) -> list[TimelinePoint]:
    """Timelines of the same bucket ``width`` as one, bucket by bucket (index by index)."""
    count = max((len(t) for t in timelines), default=0)
    points = []
    for index in range(count):
        here = [t[index] for t in timelines if index < len(t)]
        points.append(
            timeline_point(
                index * width,
                max(p.span_s for p in here),
                sum(p.failed for p in here),
                merge_all(p.latencies for p in here),
            )
        )
    return points
