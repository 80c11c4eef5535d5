"""A load run's figures recorded as each request ends: nothing per request is kept.

A generator drives about a thousand requests a second from one core, so a list of its outcomes
grows by tens of megabytes a minute and an hour-long run outgrows a pod's memory. The
:class:`Recorder` folds each outcome into the figures the report states the moment it ends: the
answers' and the failures' histograms, the failures by reason, the timeline's bucket it ended
in, the stage it started in and every stage it was in flight in, the warm-up's counts. What it
holds is bounded by the run's shape (its stages, at most
:data:`~services.green_agent.load.timeline.MAX_POINTS` time buckets, histograms of fixed log
buckets, ten error samples, and the distinct query ids of the worker's slice of the pool), never
by the requests. :meth:`Recorder.report` writes the report at any moment: a running
generator's snapshot, or its final report once the run has drained.

Times are seconds since the run's ``origin`` (``time.perf_counter()`` when it began). The
timeline is counted from the end of the warm-up, in buckets of one second that widen (to the
next of :data:`~services.green_agent.load.timeline.NICE_WIDTHS_S`, each a multiple of the one
before) whenever the run outgrows them; timelines of several widths merge into the widest. A stage's window is cut where the run
stopped starting requests (:meth:`Recorder.stop`): a request that ends in the drain after it is
in flight in the stage until then, and completed in none.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from dataclasses import dataclass, field

from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.evaluation.mcp_counters import CacheEffect
from services.green_agent.load.histogram import LatencyHistogram
from services.green_agent.load.report import LoadReport, worker_figures
from services.green_agent.load.shape import Phase, Shape
from services.green_agent.load.stages import StageFigures, WarmupFigures
from services.green_agent.load.timeline import (
    LATENCY_BINS,
    MAX_POINTS,
    NICE_WIDTHS_S,
    TimelinePoint,
    histogram_stats,
    latency_bin,
    latency_bins,
    timeline_point,
    wider,
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

    @property
    def closed(self) -> bool:
        """Whether the shape asks a concurrency (closed loop) rather than a rate."""
        return self.shape.kind == "concurrency"


@dataclass(slots=True)
class _Window:
    """What ended in one span of time: answers' latencies, failures, and time in flight."""

    latencies: LatencyHistogram = field(default_factory=LatencyHistogram)
    failed: int = 0
    busy_s: float = 0.0


@dataclass(slots=True)
class _Stage:
    """One stage's tallies: by the requests it started, and by the time others spent in it."""

    phase: Phase
    started: int = 0
    dropped: int = 0
    completed: int = 0
    errors: int = 0
    busy_s: float = 0.0
    latencies: LatencyHistogram = field(default_factory=LatencyHistogram)


class Recorder:
    """One generator's figures so far; :meth:`record` each outcome, :meth:`report` at any time."""

    def __init__(self, setup: RunSetup) -> None:
        """Figures of a run along ``setup.shape``, none recorded yet."""
        self.setup = setup
        shape = setup.shape
        self._stages = [_Stage(p) for p in shape.phases if not p.warmup]
        self._starts = [s.phase.start_s for s in self._stages]
        self._warmup_s = shape.warmup_s
        # The narrowest width: it widens as the run outgrows it (a run stopped by a signal
        # reads as finely as one that lasted as long), so at most MAX_POINTS + 1 are kept.
        self._width = NICE_WIDTHS_S[0]
        self._windows: dict[int, _Window] = {}
        self.answers = LatencyHistogram()
        self.failures = LatencyHistogram()
        self._bins = [0] * LATENCY_BINS
        self._reasons: Counter[str] = Counter()
        self._samples: list[str] = []
        self._queries: set[str] = set()
        self._warmup_ok = 0
        self._warmup_failed = 0
        self._warmup_dropped = 0
        self._stop_s = shape.total_s
        self._last_end_s = 0.0

    # -- what happens during the run ------------------------------------------------------

    def start(self, phase: Phase) -> None:
        """Count a request started in ``phase`` (the warm-up's apart)."""
        if not phase.warmup:  # the warm-up's are its outcomes, counted as they end
            self._stages[phase.index].started += 1

    def drop(self, phase: Phase) -> None:
        """Count a request the schedule could not start in ``phase``."""
        if phase.warmup:
            self._warmup_dropped += 1
        else:
            self._stages[phase.index].dropped += 1

    def stop(self, at_s: float) -> None:
        """The run stopped starting requests ``at_s`` seconds after its origin (a signal)."""
        self._stop_s = min(self._stop_s, max(at_s, 0.0))

    def record(self, outcome: QueryOutcome, begin_s: float, warm: bool = False) -> None:
        """Fold in one outcome of a request started ``begin_s`` seconds after the origin.

        ``warm``: it started in the warm-up, whose outcomes only the warm-up's counts hold.
        """
        latency = outcome.latency_s
        if warm:  # counted, not timed: no other figure of the run holds the warm-up's
            if outcome.ok:
                self._warmup_ok += 1
            else:
                self._warmup_failed += 1
            return
        end = begin_s + latency
        self._last_end_s = max(self._last_end_s, end)
        self._queries.add(outcome.query_id)
        if outcome.ok:
            self.answers.record(latency)
            self._bins[latency_bin(latency)] += 1
        else:
            self.failures.record(latency)
            reason = outcome.reason or "unknown"
            self._reasons[reason] += 1
            sample = f"{outcome.reason}: {outcome.error}"
            if len(self._samples) < ERROR_SAMPLES and sample not in self._samples:
                self._samples.append(sample)
        self._tally_timeline(outcome, begin_s, end)
        self._tally_stages(outcome, begin_s, end)

    def _tally_timeline(self, outcome: QueryOutcome, begin_s: float, end_s: float) -> None:
        low = max(begin_s - self._warmup_s, 0.0)
        high = max(end_s - self._warmup_s, 0.0)
        while high // self._width > MAX_POINTS:  # the run outgrew its buckets
            self._widen()
        width = self._width
        ended = self._window(int(high // width))
        if outcome.ok:
            ended.latencies.record(outcome.latency_s)
        else:
            ended.failed += 1
        # Its time in flight, spread over the buckets it spans (one or two, mostly).
        index = int(low // width)
        while low < high:
            edge = min(high, (index + 1) * width)
            self._window(index).busy_s += edge - low
            low, index = edge, index + 1

    def _window(self, index: int) -> _Window:
        window = self._windows.get(index)
        if window is None:
            window = self._windows[index] = _Window()
        return window

    def _widen(self) -> None:
        """Widen the buckets to the next width, each new one the sum of the old it covers."""
        new = wider(self._width)
        ratio = round(new / self._width)  # a whole number: each width divides the next
        windows: dict[int, _Window] = {}
        for i, window in self._windows.items():
            into = windows.setdefault(i // ratio, _Window())
            into.latencies = into.latencies.merged(window.latencies)
            into.failed += window.failed
            into.busy_s += window.busy_s
        self._width, self._windows = new, windows

    def _tally_stages(self, outcome: QueryOutcome, begin_s: float, end_s: float) -> None:
        first = max(bisect.bisect_right(self._starts, begin_s) - 1, 0)
        stage = self._stages[first]
        if outcome.ok:
            stage.latencies.record(outcome.latency_s)
        else:
            stage.errors += 1
        # Every stage it was in flight in: its share of that stage's time, and where it ended.
        for later in self._stages[first:]:
            low = later.phase.start_s
            if low >= end_s:
                break
            high = low + self._ran(later.phase)
            later.busy_s += max(0.0, min(end_s, high) - max(begin_s, low))
            if low <= end_s < high:
                later.completed += 1

    def _ran(self, phase: Phase) -> float:
        """Seconds ``phase`` ran: all of it, or up to the stop."""
        return min(max(self._stop_s - phase.start_s, 0.0), phase.duration_s)

    # -- the report -------------------------------------------------------------------------

    @property
    def ended_s(self) -> float:
        """When the run stopped starting requests: the shape's end, or a stop before it."""
        return self._stop_s

    @property
    def requests(self) -> int:
        """Outcomes recorded after the warm-up."""
        return self.answers.count + self.failures.count

    def report(
        self,
        now_s: float,
        *,
        cpu_s: float | None = None,
        result_cache: CacheEffect | None = None,
        stopped_early: bool = False,
        partial: bool = False,
    ) -> LoadReport:
        """The report of what was recorded up to ``now_s`` seconds after the origin.

        Mid-run it is a snapshot, ``partial`` (stages and the warm-up cut at ``now_s``); after
        the drain, ``now_s`` is when the last request ended. ``cpu_s`` is the generator's own
        CPU so far.
        """
        setup, shape = self.setup, self.setup.shape
        ended_s = min(self._stop_s, now_s)
        wall_s = now_s - self._warmup_s if ended_s > self._warmup_s else 0.0
        dropped = sum(s.dropped for s in self._stages)
        report = LoadReport(
            agent=setup.agent,
            protocol=setup.protocol,
            mode="closed-loop" if setup.closed else "open-loop",
            concurrency=int(max(s.target for s in shape.stages)) if setup.closed else None,
            target_rate=None if setup.closed else shape.mean,
            duration_s=shape.duration_s,
            wall_s=wall_s,
            requests=self.requests,
            ok=self.answers.count,
            errors=self.failures.count,
            dropped=dropped,
            throughput_rps=self.answers.count / wall_s if wall_s > 0 else 0.0,
            latency=histogram_stats(self.answers),
            error_latency=histogram_stats(self.failures),
            errors_by_reason=dict(self._reasons),
            error_samples=list(self._samples),
            timeline_bucket_s=self._width,
            timeline=self._timeline(wall_s),
            latency_histogram=latency_bins(self._bins),
            latencies=self.answers.model_copy(deep=True),
            error_latencies=self.failures.model_copy(deep=True),
            query_pool=setup.query_pool,
            pool_size=setup.pool_size,
            distinct_queries=len(self._queries),
            repeats=self.requests - len(self._queries),
            result_cache=result_cache,
            stopped_early=stopped_early,
            partial=partial,
            worker=setup.worker,
            cpu_s=cpu_s,
            run=setup.run,
            stages=self._stage_figures(ended_s),
            warmup=self._warmup_figures(ended_s),
        )
        return report.model_copy(update={"workers": [worker_figures(report)]})

    def _timeline(self, wall_s: float) -> list[TimelinePoint]:
        """One point a bucket up to the span recorded; the tail folded into the last."""
        if not self._windows:
            return []
        width = self._width
        span = max(wall_s, self._last_end_s - self._warmup_s)
        # The last point takes the tail shorter than a width (the drain after the duration): a
        # bucket of a few milliseconds would turn one late answer into a throughput spike.
        count = max(1, min(math.floor(span / width), MAX_POINTS))
        windows = [_Window() for _ in range(count)]
        for index, window in self._windows.items():
            into = windows[min(index, count - 1)]
            into.latencies = into.latencies.merged(window.latencies)
            into.failed += window.failed
            into.busy_s += window.busy_s
        points = []
        for index, window in enumerate(windows):
            start = index * width
            covered = span - start if index == count - 1 else width
            points.append(
                timeline_point(start, covered, window.failed, window.latencies, window.busy_s)
            )
        return points

    def _stage_figures(self, ended_s: float) -> list[StageFigures]:
        kind = self.setup.shape.kind
        figures = []
        for stage in self._stages:
            phase = stage.phase
            ran = min(max(ended_s - phase.start_s, 0.0), phase.duration_s)
            started_rate = _rate(stage.started, ran)
            completed_rate = _rate(stage.completed, ran)
            figures.append(
                StageFigures(
                    stage=phase.index + 1,
                    kind="ramp" if phase.ramp else "step",
                    pace=kind,
                    duration_s=phase.duration_s,
                    ran_s=ran,
                    start_target=phase.begin,
                    target=phase.end,
                    asked_rate=phase.mean if kind == "rate" else None,
                    asked_concurrency=phase.mean if kind == "concurrency" else None,
                    started=stage.started,
                    dropped=stage.dropped,
                    completed=stage.completed,
                    started_rate=started_rate,
                    completed_rate=completed_rate,
                    achieved_rate=started_rate if kind == "rate" else completed_rate,
                    mean_concurrency=_rate(stage.busy_s, ran),
                    ok=stage.latencies.count,
                    errors=stage.errors,
                    latency=histogram_stats(stage.latencies),
                    latencies=stage.latencies.model_copy(deep=True),
                )
            )
        return figures

    def _warmup_figures(self, ended_s: float) -> WarmupFigures | None:
        warmup = self.setup.shape.warmup
        if warmup is None:
            return None
        ok, failed = self._warmup_ok, self._warmup_failed
        return WarmupFigures(
            duration_s=warmup.duration_s,
            ran_s=min(max(ended_s, 0.0), warmup.duration_s),
            target=warmup.target,
            requests=ok + failed,
            ok=ok,
            errors=failed,
            dropped=self._warmup_dropped,
        )


def _rate(count: float, seconds: float) -> float:
    return count / seconds if seconds > 0 else 0.0
