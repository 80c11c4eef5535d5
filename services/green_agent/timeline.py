"""How a load run went over time, and how its answers' latencies spread.

The timeline puts every outcome in the bucket where it *ended* (``started_s + latency_s``): a
bucket's throughput is then the answers completed per second, and its percentiles those of the
answers completed in it, which is what Prometheus shows from the servers' histograms
(``rate()``, ``histogram_quantile()``) for the same window. The histogram uses the bucket edges
of those histograms (:data:`services.telemetry.metrics.LATENCY_BUCKETS`), so a share of answers
under an edge reads the same in the report and in Prometheus.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence

from pydantic import BaseModel

from services.green_agent.evaluator import QueryOutcome
from services.green_agent.report import LatencyStats, latency_stats
from services.telemetry.metrics import LATENCY_BUCKETS

#: Bucket widths in seconds, smallest first; a run gets the smallest that keeps it readable.
NICE_WIDTHS_S = (1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0)
#: Most points a timeline has (one a second up to two minutes).
MAX_POINTS = 120


class TimelinePoint(BaseModel):
    """Outcomes that ended in one time bucket of the run."""

    start_s: float
    span_s: float
    answered: int
    failed: int
    throughput_rps: float
    error_rps: float
    latency: LatencyStats


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
    outcomes: Sequence[QueryOutcome], wall_s: float
) -> tuple[float, list[TimelinePoint]]:
    """Bucket ``outcomes`` by the time they ended, counted from the first start.

    The first request starts as the run starts (every worker at once, or the schedule's first
    slot), so the earliest ``started_s`` stands for the start of the run. The last bucket also
    takes the tail shorter than one width (the drain after the duration): a bucket of a few
    milliseconds would turn one late answer into a throughput spike.

    Args:
        outcomes: Every outcome of the run.
        wall_s: The run's wall time; the timeline covers it, or the last end if that is later.

    Returns:
        The bucket width in seconds and one point a bucket (none when there are no outcomes).

    """
    if not outcomes:
        return bucket_width(wall_s), []
    origin = min(o.started_s for o in outcomes)
    ends = [o.started_s + o.latency_s - origin for o in outcomes]
    span = max(wall_s, *ends)
    width = bucket_width(span)
    count = max(1, math.floor(span / width))
    answered: list[list[float]] = [[] for _ in range(count)]
    failed = [0] * count
    for outcome, end in zip(outcomes, ends, strict=True):
        index = min(int(end // width), count - 1)
        if outcome.ok:
            answered[index].append(outcome.latency_s)
        else:
            failed[index] += 1
    points = []
    for index in range(count):
        start = index * width
        covered = span - start if index == count - 1 else width
        points.append(
            TimelinePoint(
                start_s=start,
                span_s=covered,
                answered=len(answered[index]),
                failed=failed[index],
                throughput_rps=len(answered[index]) / covered,
                error_rps=failed[index] / covered,
                latency=latency_stats(answered[index]),
            )
        )
    return width, points


def latency_histogram(latencies_s: Sequence[float]) -> list[LatencyBin]:
    """Count latencies (seconds) into the bins between :data:`LATENCY_BUCKETS`' edges.

    A latency equal to an edge counts in the bin below it, as Prometheus's ``le`` does.
    """
    counts = [0] * (len(LATENCY_BUCKETS) + 1)
    for latency in latencies_s:
        counts[bisect.bisect_left(LATENCY_BUCKETS, latency)] += 1
    # Rounded so 0.0025 s reads 2.5 ms rather than 2.5000000000000004.
    edges_ms = [round(edge * 1000, 6) for edge in LATENCY_BUCKETS]
    lowers = [0.0, *edges_ms]
    uppers: list[float | None] = [*edges_ms, None]
    return [
        LatencyBin(lower_ms=low, upper_ms=high, count=n)
        for low, high, n in zip(lowers, uppers, counts, strict=True)
    ]
