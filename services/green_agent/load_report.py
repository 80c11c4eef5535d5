"""The load report: what a load run measured, over time and as a latency histogram.

The timeline puts every outcome in the bucket where it *ended* (``started_s + latency_s``): a
bucket's throughput is then the answers completed per second, and its percentiles those of the
answers completed in it, which is what Prometheus shows from the servers' histograms
(``rate()``, ``histogram_quantile()``) for the same window. The histogram uses the bucket edges
of those histograms (:data:`services.telemetry.metrics.LATENCY_BUCKETS`), so a share of answers
under an edge reads the same in the report and in Prometheus.

Latency percentiles, of the run and of each time bucket, are read from mergeable histograms
(:mod:`services.green_agent.histogram`, 1% resolution): the reports of several generators
(``load --workers N``, one process each, or one pod each of a Kubernetes Indexed Job) merge into
one by adding counts (:func:`merge_load_reports`), and the merged percentiles are those of every
answer, never a mean of the workers' percentiles. The merged report keeps each worker's figures
and says when a generator was itself the bottleneck: its process near a whole core, or fewer
requests started than its share of the asked rate.

The report is JSON (``load --out``) and a rich table for the terminal here; its HTML page is
:mod:`services.green_agent.load_html`.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel
from rich.table import Table

from services.green_agent.eval_report import LatencyStats, milliseconds
from services.green_agent.evaluator import QueryOutcome
from services.green_agent.histogram import LatencyHistogram, merge_all
from services.green_agent.mcp_counters import CacheEffect
from services.telemetry.metrics import LATENCY_BUCKETS

#: Bucket widths in seconds, smallest first; a run gets the smallest that keeps it readable.
NICE_WIDTHS_S = (1.0, 2.0, 5.0, 10.0, 15.0, 30.0, 60.0, 120.0, 300.0, 600.0)
#: Most points a timeline has (one a second up to two minutes).
MAX_POINTS = 120
#: A generator whose process used this share of a core or more was itself the bottleneck.
GENERATOR_CPU_BOUND = 0.9
#: An open-loop generator that started less than this share of its asked requests fell behind.
GENERATOR_RATE_SHORTFALL = 0.95


def histogram_stats(histogram: LatencyHistogram) -> LatencyStats:
    """Count, mean, p50/p95/p99 (bucket upper edges, at most 1% high) and the exact maximum."""
    return LatencyStats(
        count=histogram.count,
        mean_s=histogram.mean_s,
        p50_s=histogram.quantile(0.50),
        p95_s=histogram.quantile(0.95),
        p99_s=histogram.quantile(0.99),
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
    # Rounded so 0.0025 s reads 2.5 ms rather than 2.5000000000000004.
    edges_ms = [round(edge * 1000, 6) for edge in LATENCY_BUCKETS]
    lowers = [0.0, *edges_ms]
    uppers: list[float | None] = [*edges_ms, None]
    return [
        LatencyBin(lower_ms=low, upper_ms=high, count=n)
        for low, high, n in zip(lowers, uppers, counts, strict=True)
    ]


class WorkerFigures(BaseModel):
    """One generator of a run: what it sent, how fast, what it cost, and whether it kept up.

    ``asked_rate`` is its share of an open-loop rate (None: closed loop), ``started_rate`` the
    requests it started per second of its duration; ``core_share`` is its process's CPU over
    its wall time (1.0: a whole core). ``bound`` says why it was the bottleneck, if it was.
    """

    worker: int
    requests: int
    ok: int
    errors: int
    dropped: int
    asked_rate: float | None
    started_rate: float
    throughput_rps: float
    cpu_s: float | None
    cpu_ms_per_request: float | None
    core_share: float | None
    latency: LatencyStats
    bound: list[str]


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
    # The answers' and the failures' latencies, mergeable (``latency`` and ``error_latency``
    # are read from them).
    latencies: LatencyHistogram
    error_latencies: LatencyHistogram
    # The generators: this report's own process (``worker`` its index among ``len(workers)``
    # of a run split across processes), or every worker of a merged report, with its CPU.
    worker: int = 0
    cpu_s: float | None = None
    workers: list[WorkerFigures] = []
    #: Why the load, not the agent, may have set the pace (empty: the generators kept up).
    generator_bound: list[str] = []
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
    worker: int = 0,
    split: bool = False,
    cpu_s: float | None = None,
) -> LoadReport:
    """Summarise a load run: latency of the answers, and apart how fast the failures came.

    ``cpu_s`` is the generator's own CPU over the run; ``worker`` its index in a ``split`` run,
    whose workers bucket their timelines by the duration they were asked for, so that the
    timelines merge bucket by bucket (a whole run buckets by how long it actually ran).
    """
    ok = [o for o in outcomes if o.ok]
    width = bucket_width(duration_s) if split else None
    bucket_s, timeline = build_timeline(outcomes, wall_s, width)
    errors = [o for o in outcomes if not o.ok]
    samples = list(dict.fromkeys(f"{o.reason}: {o.error}" for o in errors))[:10]
    latencies = LatencyHistogram.of(o.latency_s for o in ok)
    error_latencies = LatencyHistogram.of(o.latency_s for o in errors)
    report = LoadReport(
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
        latency=histogram_stats(latencies),
        error_latency=histogram_stats(error_latencies),
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
        latencies=latencies,
        error_latencies=error_latencies,
        worker=worker,
        cpu_s=cpu_s,
    )
    figures = worker_figures(report)
    return report.model_copy(update={"workers": [figures], "generator_bound": figures.bound})


def worker_figures(report: LoadReport) -> WorkerFigures:
    """One generator's figures, and why it was the bottleneck if it was."""
    started = report.requests / report.duration_s if report.duration_s > 0 else 0.0
    share = report.cpu_s / report.wall_s if report.cpu_s is not None and report.wall_s else None
    bound = []
    if share is not None and share >= GENERATOR_CPU_BOUND:
        bound.append(f"worker {report.worker}: its process used {share:.0%} of a core")
    asked = report.target_rate
    if asked and not report.stopped_early and started < GENERATOR_RATE_SHORTFALL * asked:
        bound.append(f"worker {report.worker}: started {started:.1f}/s of the {asked:g}/s asked")
    per_request = (
        report.cpu_s * 1000 / report.requests if report.cpu_s and report.requests else None
    )
    return WorkerFigures(
        worker=report.worker,
        requests=report.requests,
        ok=report.ok,
        errors=report.errors,
        dropped=report.dropped,
        asked_rate=asked,
        started_rate=started,
        throughput_rps=report.throughput_rps,
        cpu_s=report.cpu_s,
        cpu_ms_per_request=per_request,
        core_share=share,
        latency=report.latency,
        bound=bound,
    )


def merge_load_reports(reports: Sequence[LoadReport]) -> LoadReport:
    """The workers' reports of one run as one: counts added, histograms merged.

    Percentiles come from the merged histograms; the timelines merge bucket by bucket (every
    worker buckets by the same width, from its first request on: the workers start together).
    ``result_cache`` is left to the caller, who reads the server's counters around the whole run.

    Raises:
        ValueError: no reports, or reports of different runs (agent, protocol, mode, buckets).

    """
    if not reports:
        raise ValueError("no worker reports to merge")
    first = reports[0]
    for r in reports[1:]:
        theirs = (r.agent, r.protocol, r.mode, r.timeline_bucket_s)
        ours = (first.agent, first.protocol, first.mode, first.timeline_bucket_s)
        if theirs != ours:
            raise ValueError(f"worker {r.worker} ran {theirs}, worker {first.worker} {ours}")
    wall_s = max(r.wall_s for r in reports)
    latencies = merge_all(r.latencies for r in reports)
    error_latencies = merge_all(r.error_latencies for r in reports)
    ok = sum(r.ok for r in reports)
    errors_by_reason: Counter[str] = Counter()
    for r in reports:
        errors_by_reason.update(r.errors_by_reason)
    samples = list(dict.fromkeys(s for r in reports for s in r.error_samples))[:10]
    cpu = [r.cpu_s for r in reports]
    workers = sorted((worker_figures(r) for r in reports), key=lambda w: w.worker)
    return LoadReport(
        agent=first.agent,
        protocol=first.protocol,
        mode=first.mode,
        concurrency=_total([r.concurrency for r in reports]),
        target_rate=_total([r.target_rate for r in reports]),
        duration_s=max(r.duration_s for r in reports),
        wall_s=wall_s,
        requests=sum(r.requests for r in reports),
        ok=ok,
        errors=sum(r.errors for r in reports),
        dropped=sum(r.dropped for r in reports),
        throughput_rps=ok / wall_s if wall_s > 0 else 0.0,
        latency=histogram_stats(latencies),
        error_latency=histogram_stats(error_latencies),
        errors_by_reason=dict(errors_by_reason),
        error_samples=samples,
        timeline_bucket_s=first.timeline_bucket_s,
        timeline=_merged_timeline(reports),
        latency_histogram=[
            LatencyBin(lower_ms=b.lower_ms, upper_ms=b.upper_ms, count=sum(bins))
            for b, *bins in zip(
                first.latency_histogram,
                *([x.count for x in r.latency_histogram] for r in reports),
                strict=True,
            )
        ],
        query_pool=first.query_pool,
        pool_size=sum(r.pool_size for r in reports),  # the workers draw disjoint slices
        distinct_queries=sum(r.distinct_queries for r in reports),
        repeats=sum(r.repeats for r in reports),
        stopped_early=any(r.stopped_early for r in reports),
        latencies=latencies,
        error_latencies=error_latencies,
        cpu_s=math.fsum(c for c in cpu if c is not None) if None not in cpu else None,
        workers=workers,
        generator_bound=[reason for w in workers for reason in w.bound],
    )


def _total(values: list[int | None] | list[float | None]) -> Any:
    return None if None in values else sum(v for v in values if v is not None)


def _merged_timeline(reports: Sequence[LoadReport]) -> list[TimelinePoint]:
    width = reports[0].timeline_bucket_s
    count = max(len(r.timeline) for r in reports)
    points = []
    for index in range(count):
        here = [r.timeline[index] for r in reports if index < len(r.timeline)]
        points.append(
            timeline_point(
                index * width,
                max(p.span_s for p in here),
                sum(p.failed for p in here),
                merge_all(p.latencies for p in here),
            )
        )
    return points


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


def workers_table(report: LoadReport) -> Table:
    """Each generator of a run: what it sent, at what pace, and what it cost."""
    table = Table(title=f"{len(report.workers)} generators")
    columns = ("worker", "sent", "ok", "err", "drop", "asked/s", "started/s", "p50", "p99")
    for column in (*columns, "CPU/request", "of a core"):
        table.add_column(column, justify="right")
    for w in report.workers:
        table.add_row(
            str(w.worker),
            str(w.requests),
            str(w.ok),
            str(w.errors),
            str(w.dropped),
            "-" if w.asked_rate is None else f"{w.asked_rate:.1f}",
            f"{w.started_rate:.1f}",
            milliseconds(w.latency.p50_s),
            milliseconds(w.latency.p99_s),
            "-" if w.cpu_ms_per_request is None else f"{w.cpu_ms_per_request:.2f} ms",
            "-" if w.core_share is None else f"{w.core_share:.0%}",
        )
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
