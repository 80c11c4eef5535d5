"""A load run's figures, as Locust's ``StatsEntry`` holds them: record, merge, write the report.

A generator drives about a thousand requests a second from one core, so a list of its outcomes
grows by tens of megabytes a minute and an hour-long run outgrows a pod's memory. The
:class:`Recorder` folds each outcome into the figures the report states the moment it ends: the
answers' and the failures' histograms, the failures by reason, the timeline's bucket it ended
in (:class:`~services.green_agent.load.timeline.Timeline`), the stage it started in and every
stage it was in flight in (:class:`~services.green_agent.load.stages.StageTally`), the
warm-up's counts. What it holds is bounded by the run's shape (its stages, at most
:data:`~services.green_agent.load.timeline.MAX_POINTS` time buckets, histograms of fixed log
buckets, ten error samples, and the distinct query ids of the worker's slice of the pool), never
by the requests. :meth:`Recorder.report` writes the report at any moment: a running
generator's snapshot, or its final report once the run has drained.

The figures of several generators of one run merge (:meth:`Recorder.merge`, from their reports
with :meth:`Recorder.of_report`): counts add, histograms merge (so the merged percentiles are
those of every answer, never a mean of the generators'), the pace adds stage by stage, and
the run lasted as long as its longest generator. :func:`merge_load_reports` is that for reports.

Times are seconds since the run's ``origin`` (``time.perf_counter()`` when it began); the
timeline counts from the end of the warm-up. A stage's window is cut where the run stopped
starting requests (:meth:`Recorder.stop`): a request that ends in the drain after it is in
flight in the stage until then, and completed in none.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.evaluation.mcp_counters import CacheEffect
from services.green_agent.load.histogram import LatencyHistogram
from services.green_agent.load.report import LoadReport, WorkerFigures, worker_figures
from services.green_agent.load.shape import Phase, Shape, Stage
from services.green_agent.load.stages import StageTally, WarmupFigures
from services.green_agent.load.thresholds import judge, parse_budgets
from services.green_agent.load.timeline import (
    LATENCY_BINS,
    Timeline,
    histogram_stats,
    latency_bin,
    latency_bins,
)

#: Distinct failure messages a report keeps as samples.
ERROR_SAMPLES = 10


@dataclass(frozen=True, slots=True)
class RunSetup:
    """What a generator was asked: the report's fields that no outcome changes.

    ``shape`` is this generator's own (its share of a split run's, :mod:`.workers`);
    ``pool_size`` the queries of its slice of the pool; ``worker`` its index in a run split
    across processes or pods, and ``run`` the run's name (a release and its revision).
    """

    agent: str
    protocol: str
    shape: Shape
    query_pool: str = "test"
    pool_size: int = 0
    worker: int = 0
    run: str = ""


class Recorder:
    """A generator's figures so far, or several generators' merged: record, merge, report."""

    def __init__(self, setup: RunSetup) -> None:
        """Figures of a run along ``setup.shape``, none recorded yet."""
        self.setup = setup
        shape = setup.shape
        self._stages = [StageTally(p) for p in shape.phases if not p.warmup]
        self._starts = [s.phase.start_s for s in self._stages]
        self._warmup_s = shape.warmup_s
        self.timeline = Timeline()
        self.answers = LatencyHistogram()
        self.failures = LatencyHistogram()
        self._bins = [0] * LATENCY_BINS
        self._reasons: Counter[str] = Counter()
        self._samples: list[str] = []
        self._queries: set[str] = set()
        self._warmup = [0, 0, 0]  # answered, failed, dropped
        self._stop_s = shape.total_s
        # What a recorder made of reports carries that a running one reads as it reports: the
        # distinct queries of the parts (their ids are not in a report), the latest end of the
        # parts, their CPU, their generators' own figures, whether any was stopped early.
        self._more_queries = 0
        self._now_s: float | None = None
        self._cpu_s: float | None = None
        self._workers: list[WorkerFigures] = []
        self._stopped_early = False
        self._report_every_s = 0.0

    # -- what happens during the run ------------------------------------------------------

    def start(self, phase: Phase) -> None:
        """Count a request started in ``phase`` (the warm-up's apart)."""
        if not phase.warmup:  # the warm-up's are its outcomes, counted as they end
            self._stages[phase.index].started += 1

    def drop(self, phase: Phase) -> None:
        """Count a request the schedule could not start in ``phase``."""
        if phase.warmup:
            self._warmup[2] += 1
        else:
            self._stages[phase.index].dropped += 1

    def stop(self, at_s: float) -> None:
        """The run stopped starting requests ``at_s`` seconds after its origin (a signal)."""
        self._stop_s = min(self._stop_s, max(at_s, 0.0))

    def record(self, outcome: QueryOutcome, begin_s: float, warm: bool = False) -> None:
        """Fold in one outcome of a request started ``begin_s`` seconds after the origin.

        ``warm``: it started in the warm-up, whose outcomes only the warm-up's counts hold.
        """
        if warm:  # counted, not timed: no other figure of the run holds the warm-up's
            self._warmup[0 if outcome.ok else 1] += 1
            return
        latency = outcome.latency_s
        end = begin_s + latency
        self._queries.add(outcome.query_id)
        if outcome.ok:
            self.answers.record(latency)
            self._bins[latency_bin(latency)] += 1
        else:
            self.failures.record(latency)
            self._reasons[outcome.reason or "unknown"] += 1
            sample = f"{outcome.reason}: {outcome.error}"
            if len(self._samples) < ERROR_SAMPLES and sample not in self._samples:
                self._samples.append(sample)
        answered = latency if outcome.ok else None
        self.timeline.record(begin_s - self._warmup_s, end - self._warmup_s, answered)
        first = max(bisect.bisect_right(self._starts, begin_s) - 1, 0)
        stage = self._stages[first]
        if outcome.ok:
            stage.latencies.record(latency)
        else:
            stage.errors += 1
        # Every stage it was in flight in: its share of that stage's time, and where it ended.
        for later in self._stages[first:]:
            low = later.phase.start_s
            if low >= end:
                break
            high = low + min(max(self._stop_s - low, 0.0), later.phase.duration_s)
            later.busy_s += max(0.0, min(end, high) - max(begin_s, low))
            if low <= end < high:
                later.completed += 1

    @property
    def ended_s(self) -> float:
        """When the run stopped starting requests: the shape's end, or a stop before it."""
        return self._stop_s

    @property
    def requests(self) -> int:
        """Outcomes recorded after the warm-up."""
        return self.answers.count + self.failures.count

    # -- several generators as one ----------------------------------------------------------

    @classmethod
    def of_report(cls, report: LoadReport) -> Recorder:
        """The recorder whose report a generator's ``report`` is, to merge it with others'."""
        shape = _shape_of(report)
        setup = RunSetup(
            report.agent,
            report.protocol,
            shape,
            report.query_pool,
            report.pool_size,
            report.worker,
            report.run,
        )
        recorder = cls(setup)
        recorder.answers = report.latencies.model_copy(deep=True)
        recorder.failures = report.error_latencies.model_copy(deep=True)
        recorder._bins = [b.count for b in report.latency_histogram]
        recorder._reasons = Counter(report.errors_by_reason)
        recorder._samples = list(report.error_samples)
        recorder._more_queries = report.distinct_queries
        recorder.timeline = Timeline.of_points(report.timeline_bucket_s, report.timeline)
        phases = [p for p in shape.phases if not p.warmup]
        recorder._stages = [
            StageTally.of_figures(p, f) for p, f in zip(phases, report.stages, strict=True)
        ]
        ended_s = 0.0
        if (warmup := report.warmup) is not None:
            recorder._warmup = [warmup.ok, warmup.errors, warmup.dropped]
            ended_s = warmup.ran_s
        for phase, figures in zip(phases, report.stages, strict=True):
            if figures.ran_s > 0:
                ended_s = phase.start_s + figures.ran_s
        recorder._stop_s = ended_s
        recorder._now_s = report.wall_s + shape.warmup_s if report.wall_s > 0 else ended_s
        recorder._cpu_s = report.cpu_s
        recorder._workers = [worker_figures(report)]  # read off its figures, not taken on trust
        recorder._stopped_early = report.stopped_early
        recorder._report_every_s = report.report_every_s
        return recorder

    def merge(self, other: Recorder) -> None:
        """Add ``other``'s figures to these: another generator of the same run.

        Raises:
            ValueError: ``other`` ran another run, agent, protocol, pace or stages; nothing
                changes then.

        """
        mine, theirs = self.setup, other.setup
        if (theirs.run, theirs.agent, theirs.protocol) != (mine.run, mine.agent, mine.protocol):
            raise ValueError(
                f"worker {theirs.worker} ran {(theirs.run, theirs.agent, theirs.protocol)}, "
                f"worker {mine.worker} {(mine.run, mine.agent, mine.protocol)}"
            )
        shape = _summed(mine.shape, theirs.shape)
        self.setup = replace(mine, shape=shape, pool_size=mine.pool_size + theirs.pool_size)
        phases = [p for p in shape.phases if not p.warmup]
        for stage, phase, part in zip(self._stages, phases, other._stages, strict=True):
            stage.phase = phase
            stage.add(part)
        self.answers = self.answers.merged(other.answers)
        self.failures = self.failures.merged(other.failures)
        self._bins = [a + b for a, b in zip(self._bins, other._bins, strict=True)]
        self._reasons.update(other._reasons)
        self._samples = list(dict.fromkeys([*self._samples, *other._samples]))[:ERROR_SAMPLES]
        self._more_queries += len(other._queries) + other._more_queries  # disjoint slices
        self.timeline.merge(other.timeline)
        self._warmup = [a + b for a, b in zip(self._warmup, other._warmup, strict=True)]
        self._now_s = max(self._end_of_parts(), other._end_of_parts())
        self._stop_s = max(self._stop_s, other._stop_s)
        both = (self._cpu_s, other._cpu_s)
        self._cpu_s = None if None in both else math.fsum(c for c in both if c is not None)
        self._workers = sorted([*self._workers, *other._workers], key=lambda w: w.worker)
        self._stopped_early = self._stopped_early or other._stopped_early
        self._report_every_s = max(self._report_every_s, other._report_every_s)

    def _end_of_parts(self) -> float:
        return self._now_s if self._now_s is not None else self._stop_s

    # -- the report -------------------------------------------------------------------------

    def report(
        self,
        now_s: float | None = None,
        *,
        cpu_s: float | None = None,
        result_cache: CacheEffect | None = None,
        stopped_early: bool = False,
        partial: bool = False,
    ) -> LoadReport:
        """The report of what was recorded up to ``now_s`` seconds after the origin.

        Mid-run it is a snapshot, ``partial`` (stages and the warm-up cut at ``now_s``); after
        the drain, ``now_s`` is when the last request ended. ``cpu_s`` is the generator's own
        CPU so far. A recorder made of reports reports as their longest (``now_s`` None), with
        their CPU and each generator's figures.
        """
        setup, shape = self.setup, self.setup.shape
        closed = shape.loop == "closed"
        now_s = self._end_of_parts() if now_s is None else now_s
        ended_s = min(self._stop_s, now_s)
        wall_s = now_s - self._warmup_s if ended_s > self._warmup_s else 0.0
        distinct = len(self._queries) + self._more_queries
        report = LoadReport(
            agent=setup.agent,
            protocol=setup.protocol,
            loop=shape.loop,
            concurrency=int(max(s.target for s in shape.stages)) if closed else None,
            target_rate=None if closed else shape.mean,
            duration_s=shape.duration_s,
            wall_s=wall_s,
            requests=self.requests,
            ok=self.answers.count,
            errors=self.failures.count,
            dropped=sum(s.dropped for s in self._stages),
            throughput_rps=self.answers.count / wall_s if wall_s > 0 else 0.0,
            latency=histogram_stats(self.answers),
            error_latency=histogram_stats(self.failures),
            errors_by_reason=dict(self._reasons),
            error_samples=list(self._samples),
            timeline_bucket_s=self.timeline.width,
            timeline=self.timeline.points(wall_s),
            latency_histogram=latency_bins(self._bins),
            latencies=self.answers.model_copy(deep=True),
            error_latencies=self.failures.model_copy(deep=True),
            query_pool=setup.query_pool,
            pool_size=setup.pool_size,
            distinct_queries=distinct,
            repeats=self.requests - distinct,
            result_cache=result_cache,
            stopped_early=stopped_early or self._stopped_early,
            partial=partial,
            report_every_s=self._report_every_s,
            worker=setup.worker,
            cpu_s=self._cpu_s if cpu_s is None else cpu_s,
            run=setup.run,
            stages=[s.figures(shape.loop, ended_s) for s in self._stages],
            warmup=self._warmup_figures(ended_s),
        )
        workers = self._workers or [worker_figures(report)]
        return report.model_copy(update={"workers": workers})

    def _warmup_figures(self, ended_s: float) -> WarmupFigures | None:
        warmup = self.setup.shape.warmup
        if warmup is None:
            return None
        ok, failed, dropped = self._warmup
        return WarmupFigures(
            duration_s=warmup.duration_s,
            ran_s=min(max(ended_s, 0.0), warmup.duration_s),
            target=warmup.target,
            requests=ok + failed,
            ok=ok,
            errors=failed,
            dropped=dropped,
        )


def merge_load_reports(reports: Sequence[LoadReport]) -> LoadReport:
    """The workers' reports of one run as one (:meth:`Recorder.merge`), its budgets judged.

    ``result_cache`` is left to the caller, who reads the server's counters around the whole
    run. The workers' budgets, listed in their reports, are judged on the merged figures.

    Raises:
        ValueError: no reports, or reports of different runs (run name, agent, protocol, pace,
            stages, budgets).

    """
    if not reports:
        raise ValueError("no worker reports to merge")
    first = reports[0]
    budgets = [t.budget for t in first.thresholds]
    merged = Recorder.of_report(first)
    for report in reports[1:]:
        if [t.budget for t in report.thresholds] != budgets:
            raise ValueError(f"worker {report.worker} ran other budgets than worker {first.worker}")
        merged.merge(Recorder.of_report(report))
    whole = merged.report()
    return whole.model_copy(update={"thresholds": judge(parse_budgets(budgets), whole)})


def _shape_of(report: LoadReport) -> Shape:
    """The shape a report ran: its stages' targets, its warm-up's."""
    stages = tuple(Stage(s.duration_s, s.target, s.kind == "ramp") for s in report.stages)
    warmup = report.warmup
    return Shape(report.loop, stages, Stage(warmup.duration_s, warmup.target) if warmup else None)


def _summed(a: Shape, b: Shape) -> Shape:
    """Two generators' shares of one shape as one: each stage's targets added.

    Raises:
        ValueError: they are not alike (pace, stages, ramps, durations, warm-up).

    """
    layout = [(s.duration_s, s.ramp) for s in a.stages]
    if a.loop != b.loop or layout != [(s.duration_s, s.ramp) for s in b.stages]:
        raise ValueError("the workers' reports ran different stages: they merge only alike")
    if (a.warmup is None) != (b.warmup is None):
        raise ValueError("the workers' reports ran different warm-ups: they merge only alike")
    stages = tuple(
        replace(s, target=s.target + t.target) for s, t in zip(a.stages, b.stages, strict=True)
    )
    warmup = None
    if a.warmup is not None and b.warmup is not None:
        warmup = replace(a.warmup, target=a.warmup.target + b.warmup.target)
    return Shape(a.loop, stages, warmup)
