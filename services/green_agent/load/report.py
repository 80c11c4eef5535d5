"""The load report: what a load run measured, and its generators.

It is written by :class:`~services.green_agent.load.recorder.Recorder`, which also merges the
reports of a run's generators (``load --workers N``, one process each, or one pod each of a
Kubernetes Indexed Job). Its timeline and latency histograms are
:mod:`services.green_agent.load.timeline`'s. Latency percentiles, of the run and of each time
bucket, are read from mergeable histograms (:mod:`services.green_agent.load.histogram`, 1%
resolution): the merged percentiles are those of every answer, never a mean of the workers'. The merged report keeps each worker's figures
and says when a generator was itself the bottleneck: its process near a whole core, or fewer
requests started than its share of the asked rate.

The report is JSON (``load --out``); its terminal tables are in
:mod:`services.green_agent.load.outputs`, its HTML page in
:mod:`services.green_agent.load.html_page`, its CSV files in
:mod:`services.green_agent.load.csv_files`. It carries the run's budgets
(:mod:`services.green_agent.load.thresholds`), judged on a whole run and by the merge. A report
whose figures do not hold together is refused as it is read
(:mod:`services.green_agent.load.invariants`).
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, Field, computed_field, model_validator

from services.green_agent.evaluation.mcp_counters import CacheEffect
from services.green_agent.evaluation.report import LatencyStats
from services.green_agent.load.histogram import LatencyHistogram
from services.green_agent.load.invariants import check_figures
from services.green_agent.load.shape import Loop
from services.green_agent.load.stages import (
    StageFigures,
    WarmupFigures,
)
from services.green_agent.load.thresholds import Threshold, breaches
from services.green_agent.load.timeline import (
    LatencyBin,
    TimelinePoint,
)

#: A generator whose process used this share of a core or more was itself the bottleneck.
GENERATOR_CPU_BOUND = 0.9
#: An open-loop generator that started less than this share of its asked requests fell behind.
GENERATOR_RATE_SHORTFALL = 0.95


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
    # "running": its figures are a snapshot it sent while it ran, "cut short": a snapshot it
    # sent before it fell silent (it died; the run's figures hold its share up to then).
    status: Literal["finished", "running", "cut short"] = "finished"


class LoadReport(BaseModel):
    """What one load run measured.

    A generator writes it with :class:`~services.green_agent.load.recorder.Recorder`.
    ``timeline`` has one point per ``timeline_bucket_s`` of the run,
    ``latency_histogram`` counts the answers between the services' Prometheus bucket edges.
    """

    agent: str
    protocol: str
    loop: Loop
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

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented pattern
    @property
    def generator_bound(self) -> list[str]:
        """Why the load, not the agent, may have set the pace (empty: the generators kept up)."""
        return [reason for w in self.workers for reason in w.bound]

    # The workload (services.green_agent.load.run): which queries, how many asked again, and
    # how much of the run the MCP server's result cache answered (None: its metrics unread).
    query_pool: str = "test"
    pool_size: int = 0
    distinct_queries: int = 0
    repeats: int = 0
    result_cache: CacheEffect | None = None
    # Why the result cache's figure is missing when the server was named but not read (its
    # /metrics refused, unreachable, silent on the counter); None when it was read or not named.
    result_cache_unread: str | None = Field(default=None, max_length=500)
    # Ended by a signal before ``duration_s`` had passed (``wall_s`` is how long it ran).
    stopped_early: bool = False
    # A running generator's snapshot of its figures so far (handed to a collector every
    # ``report_every_s`` seconds; 0: it sends none), numbered by ``sequence`` from 0: its final
    # report comes after its last snapshot, with the next number.
    partial: bool = False
    sequence: int = Field(default=0, ge=0)
    # The generator process that wrote it: a retried pod's reports replace the earlier one's,
    # whatever their numbers.
    session: str = Field(default="", max_length=64)
    report_every_s: float = Field(default=0.0, ge=0.0, allow_inf_nan=False)
    # The run the report belongs to (``load --run``, e.g. a release and its revision): workers'
    # reports merge only within one run, and a collector takes only its own run's.
    run: str = ""
    # A collector's merge of the workers that have reported so far: False until every one has,
    # and the workers still to come.
    complete: bool = True
    waiting_for: list[int] = []
    # The workers that fell silent mid-run: their figures end at their last snapshot.
    cut_short: list[int] = []
    # The load's shape (services.green_agent.load.stages): each stage's figures, and the
    # warm-up's outcomes, which no other figure counts (None: no warm-up). With stages,
    # ``target_rate`` is the stages' mean asked rate and ``concurrency`` their peak.
    stages: list[StageFigures] = []
    warmup: WarmupFigures | None = None
    # The budgets the run was given (``load --threshold``), each with its figure and verdict:
    # judged on a whole run, listed unjudged in a worker's report (its merge judges them).
    thresholds: list[Threshold] = []

    @model_validator(mode="after")
    def _figures_hold(self) -> LoadReport:
        """Refuse figures that do not hold together (:mod:`~services.green_agent.load.invariants`)."""
        check_figures(self)
        return self

    @computed_field  # type: ignore[prop-decorator]  # pydantic's documented pattern
    @property
    def breached(self) -> list[str]:
        """The budgets the run breached, each with its figure (empty: none, or none judged)."""
        return [t.line() for t in breaches(self.thresholds)]


def worker_figures(report: LoadReport) -> WorkerFigures:
    """One generator's figures, and why it was the bottleneck if it was."""
    started = report.requests / report.duration_s if report.duration_s > 0 else 0.0
    share = report.cpu_s / report.wall_s if report.cpu_s is not None and report.wall_s else None
    bound = []
    if share is not None and share >= GENERATOR_CPU_BOUND:
        bound.append(f"worker {report.worker}: its process used {share:.0%} of a core")
    asked = report.target_rate
    whole = not (report.stopped_early or report.partial)  # a share of the duration ran
    if asked and whole and started < GENERATOR_RATE_SHORTFALL * asked:
        bound.append(f"worker {report.worker}: started {started:.1f}/s of the {asked:g}/s asked")
    per_request = (
        report.cpu_s * 1000 / report.requests if report.cpu_s and report.requests else None
    )
    return WorkerFigures(
        status="running" if report.partial else "finished",
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


def pace_setting(report: LoadReport) -> str:
    """The pace a run asked: ``rate 20/s``, ``concurrency 8``, or its stages and their mean."""
    staged = len(report.stages) > 1 or any(s.kind == "ramp" for s in report.stages)
    if report.concurrency is not None:
        pace = f"{'peak ' if staged else ''}concurrency {report.concurrency}"
    else:
        pace = f"{'mean ' if staged else ''}rate {report.target_rate:g}/s"
    if staged:
        pace = f"{len(report.stages)} stages, {pace}"
    if report.warmup is not None:
        pace += f", after {report.warmup.ran_s:g} s of warm-up"
    return pace


def workload_line(report: LoadReport) -> str:
    """What the run asked, and how much of it the MCP server's result cache answered."""
    pool = "every NFCorpus query" if report.query_pool == "all" else "the test queries"
    line = (
        f"{report.distinct_queries:,} distinct queries of {pool} ({report.pool_size:,}), "
        f"{report.repeats:,} asked again"
    )
    cache = report.result_cache
    if cache is None and report.result_cache_unread:
        return line + f"; result cache: not read ({report.result_cache_unread})"
    if cache is None:
        return line + "; result cache: not read (give --mcp-url)"
    if cache.hit_ratio is None:
        return line + "; result cache: no lookups (off)"
    return line + f"; result cache hits {cache.hit_ratio:.1%} of {cache.lookups:,} lookups"
