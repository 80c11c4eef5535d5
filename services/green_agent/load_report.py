"""The load report: what a load run measured, over time and as a latency histogram.

The timeline puts every outcome in the bucket where it *ended* (``started_s + latency_s``): a
bucket's throughput is then the answers completed per second, and its percentiles those of the
answers completed in it, which is what Prometheus shows from the servers' histograms
(``rate()``, ``histogram_quantile()``) for the same window. The histogram uses the bucket edges
of those histograms (:data:`services.telemetry.metrics.LATENCY_BUCKETS`), so a share of answers
under an edge reads the same in the report and in Prometheus.

The report is JSON (``load --out``) and a rich table for the terminal here; its HTML page is
:mod:`services.green_agent.load_html`.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel
from rich.table import Table

from services.green_agent.eval_report import LatencyStats, latency_stats, milliseconds
from services.green_agent.evaluator import QueryOutcome
from services.green_agent.mcp_counters import CacheEffect
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


class LoadReport(BaseModel):
    """What one load run measured.

    ``timeline`` has one point per ``timeline_bucket_s`` of the run (:func:`build_timeline`),
    ``latency_histogram`` counts the answers between the services' Prometheus bucket edges.
    """

    agent: str
    protocol: str
    mode: str
    concurrency: int | None
    target_rate: float | None
    duration_s: float
    wall_s: float
    requests: int
    ok: int
    errors: int
    dropped: int
    throughput_rps: float
    latency: LatencyStats
    error_latency: LatencyStats
    errors_by_reason: dict[str, int]
    error_samples: list[str]
    timeline_bucket_s: float
    timeline: list[TimelinePoint]
    latency_histogram: list[LatencyBin]
    # The workload (services.green_agent.load): which queries, how many asked again, and
    # how much of the run the MCP server's result cache answered (None: its metrics unread).
    query_pool: str = "test"
    pool_size: int = 0
    distinct_queries: int = 0
    repeats: int = 0
    result_cache: CacheEffect | None = None
    # Ended by a signal before ``duration_s`` had passed (``wall_s`` is how long it ran).
    stopped_early: bool = False


def build_load_report(
    outcomes: Sequence[QueryOutcome],
    dropped: int,
    wall_s: float,
    *,
    agent: str,
    protocol: str,
    duration_s: float,
    concurrency: int | None,
    rate: float | None,
    query_pool: str = "test",
    pool_size: int = 0,
    result_cache: CacheEffect | None = None,
    stopped_early: bool = False,
) -> LoadReport:
    """Summarise a load run: latency of the answers, and apart how fast the failures came."""
    ok = [o for o in outcomes if o.ok]
    bucket_s, timeline = build_timeline(outcomes, wall_s)
    errors = [o for o in outcomes if not o.ok]
    samples = list(dict.fromkeys(f"{o.reason}: {o.error}" for o in errors))[:10]
    return LoadReport(
        agent=agent,
        protocol=protocol,
        mode="closed-loop" if concurrency is not None else "open-loop",
        concurrency=concurrency,
        target_rate=rate,
        duration_s=duration_s,
        wall_s=wall_s,
        requests=len(outcomes),
        ok=len(ok),
        errors=len(errors),
        dropped=dropped,
        throughput_rps=len(ok) / wall_s if wall_s > 0 else 0.0,
        latency=latency_stats([o.latency_s for o in ok]),
        error_latency=latency_stats([o.latency_s for o in errors]),
        errors_by_reason=dict(Counter(o.reason or "unknown" for o in errors)),
        error_samples=samples,
        timeline_bucket_s=bucket_s,
        timeline=timeline,
        latency_histogram=latency_histogram([o.latency_s for o in ok]),
        query_pool=query_pool,
        pool_size=pool_size,
        distinct_queries=len({o.query_id for o in outcomes}),
        repeats=len(outcomes) - len({o.query_id for o in outcomes}),
        result_cache=result_cache,
        stopped_early=stopped_early,
    )


def load_table(report: LoadReport) -> Table:
    """Show a load run as one rich table."""
    setting = (
        f"concurrency {report.concurrency}"
        if report.concurrency is not None
        else f"rate {report.target_rate:g}/s"
    )
    table = Table(title=f"load on {report.agent} (A2A {report.protocol}, {setting})")
    for column in ("sent", "ok", "err", "drop", "rps", "p50", "p95", "p99", "max"):
        table.add_column(column, justify="right")
    lat = report.latency
    table.add_row(
        str(report.requests),
        str(report.ok),
        str(report.errors),
        str(report.dropped),
        f"{report.throughput_rps:.1f}",
        milliseconds(lat.p50_s),
        milliseconds(lat.p95_s),
        milliseconds(lat.p99_s),
        milliseconds(lat.max_s),
    )
    table.caption = workload_line(report)
    return table


def workload_line(report: LoadReport) -> str:
    """What the run asked, and how much of it the MCP server's result cache answered."""
    pool = "every NFCorpus query" if report.query_pool == "all" else "the test queries"
    line = (
        f"{report.distinct_queries:,} distinct queries of {pool} ({report.pool_size:,}), "
        f"{report.repeats:,} asked again"
    )
    cache = report.result_cache
    if cache is None:
        return line + "; result cache: not read (give --mcp-url)"
    if cache.hit_ratio is None:
        return line + "; result cache: no lookups (off)"
    return line + f"; result cache hits {cache.hit_ratio:.1%} of {cache.lookups:,} lookups"
