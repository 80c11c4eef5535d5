"""A run along a shape, in process against a fake agent: its stages' figures, the warm-up kept
apart, workers grown and shrunk, the progress line; and the figures of workers merged."""

from __future__ import annotations

import asyncio
import time

import pytest

from services.green_agent.evaluation.answer_contract import Reply, ReplyPart
from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.load.histogram import LatencyHistogram
from services.green_agent.load.progress import PREFIX, progress_line
from services.green_agent.load.recorder import Recorder, RunSetup, merge_load_reports
from services.green_agent.load.run import run_shape
from services.green_agent.load.shape import Shape, parse_shape
from services.green_agent.load.stages import stages_table

IDS = frozenset(f"MED-{i}" for i in range(10))
QUERIES = [(f"q{i}", f"text {i}") for i in range(50)]


class FakeAgent:
    """Answers every query correctly after ``latency_s``; fails those whose text ends in 7."""

    def __init__(self, latency_s: float = 0.002) -> None:
        self.latency_s = latency_s
        self.in_flight = 0
        self.most = 0
        self.samples: list[tuple[float, int]] = []

    async def ask(self, query: str, top_k: int) -> Reply:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        self.samples.append((time.perf_counter(), self.in_flight))
        try:
            await asyncio.sleep(self.latency_s)
        finally:
            self.in_flight -= 1
        if query.endswith("7"):
            return Reply("failed")
        data = {"doc_ids": sorted(IDS)[:top_k]}
        return Reply("completed", artifacts=[[ReplyPart("data", data)]])

    async def aclose(self) -> None:
        pass


def _setup(shape: Shape, worker: int = 0) -> RunSetup:
    return RunSetup(agent="fake", protocol="1.0", shape=shape, worker=worker)


async def test_an_open_loop_starts_each_stages_requests_and_keeps_the_warm_up_apart() -> None:
    shape = parse_shape("0.5s:40/s,ramp:1s:80/s,0.5s:20/s", "0.5s:20/s")
    lines: list[str] = []
    seen: list[tuple[QueryOutcome, bool]] = []
    run = await run_shape(
        FakeAgent(),
        QUERIES,
        IDS,
        _setup(shape),
        top_k=5,
        progress_s=0.4,
        on_progress=lines.append,
        on_outcome=lambda outcome, warm: seen.append((outcome, warm)),
    )
    report = run.report()
    warm = [o for o, w in seen if w]
    measured = [o for o, w in seen if not w]
    # Counted where each started: on time, the schedule's (a late start near a boundary may
    # fall in the next stage, on a busy machine).
    stages = report.stages
    assert len(seen) == 100
    for stage, due in zip(stages, (20, 60, 10), strict=True):
        assert stage.started == pytest.approx(due, abs=1), stages
    # Every outcome of the warm-up started before the stages, every other one after.
    first_stage = run.origin + shape.warmup_s
    assert all(o.started_s < first_stage for o in warm)
    assert all(o.started_s >= first_stage for o in measured)
    assert [s.asked_rate for s in stages] == [40, 60, 20]
    for stage in stages:
        assert stage.asked_rate is not None
        assert stage.achieved_rate == pytest.approx(stage.asked_rate, abs=1 / stage.ran_s)
        assert stage.ok + stage.errors == stage.started and stage.latencies.count == stage.ok
    assert [(s.kind, s.start_target, s.target) for s in stages] == [
        ("step", 40, 40),
        ("ramp", 40, 80),
        ("step", 20, 20),
    ]
    warmup = report.warmup
    assert warmup is not None and (warmup.target, warmup.ran_s) == (20, 0.5)
    assert warmup.requests == warmup.ok + warmup.errors == len(warm) == pytest.approx(10, abs=1)
    assert warmup.errors == 1  # "text 7" fails
    # The warm-up is in no figure: requests, latencies, timeline.
    assert report.requests == len(measured) == sum(s.started for s in report.stages)
    assert report.latencies.count == report.ok == sum(s.ok for s in stages)
    assert sum(p.answered + p.failed for p in report.timeline) == report.requests
    assert report.target_rate == pytest.approx(45) and report.generator_bound == []
    # A progress line every 0.4 s of the 2.5 s run, the first in the warm-up.
    assert 4 <= len(lines) <= 7, lines
    assert all(line.startswith(PREFIX) for line in lines)
    assert "warm-up at 20/s" in lines[0] and "stage 2/3 ramp to 80/s (now" in lines[2]


async def test_a_closed_loop_grows_and_shrinks_its_workers() -> None:
    agent = FakeAgent(latency_s=0.01)
    shape = parse_shape("0.6s:1,0.6s:4,ramp:0.6s:1,0.3s:1")
    run = await run_shape(agent, QUERIES, IDS, _setup(shape), top_k=5)
    assert agent.most == 4
    # In flight as each request starts: one, then four, then one again once the ramp is down
    # to one worker (from 1.75 s; a margin for the last requests of the others to end).
    by_time = [(t - run.origin, n) for t, n in agent.samples]
    assert max(n for t, n in by_time if t < 0.55) == 1
    assert max(n for t, n in by_time if 0.65 < t < 1.15) == 4
    assert max(n for t, n in by_time if t > 1.85) == 1
    report = run.report()
    one, four, ramp, _ = report.stages
    assert one.asked_concurrency == 1 and four.asked_concurrency == 4
    assert ramp.asked_concurrency == pytest.approx(2.5)
    assert one.mean_concurrency == pytest.approx(1, rel=0.1)
    assert four.mean_concurrency == pytest.approx(4, rel=0.1)
    # The ramp's workers lie between its ends. How close to the straight line they keep is the
    # machine's: a worker leaves when its request ends, and a stalled event loop ends them late
    # (a loaded fresh-clone CI run saw 3.1 for the asked 2.5).
    assert one.mean_concurrency < ramp.mean_concurrency < four.mean_concurrency
    # Completed per second: more workers complete more (how much more is the machine's own
    # figure, a benchmark's business: under a loaded suite one stalled pass halves it).
    assert four.achieved_rate == four.completed_rate > one.achieved_rate
    assert report.warmup is None
    # The timeline's requests in flight follow the same shape.
    assert max(p.in_flight for p in report.timeline) > 1.5


async def test_a_run_stopped_early_reports_what_its_stages_ran() -> None:
    stop = asyncio.Event()
    shape = parse_shape("0.4s:50/s,5s:50/s")
    asyncio.get_running_loop().call_later(0.8, stop.set)
    run = await run_shape(FakeAgent(), QUERIES, IDS, _setup(shape), top_k=5, stop=stop)
    first, second = run.report(stopped_early=True).stages
    assert first.ran_s == pytest.approx(0.4) and first.started == 20
    assert second.ran_s == pytest.approx(0.4, abs=0.05)
    assert second.achieved_rate == pytest.approx(50, rel=0.1)


def _recorded(
    shape: Shape, outcomes: list[QueryOutcome], dropped: int = 0, worker: int = 0
) -> Recorder:
    """A recorder given ``outcomes`` (``started_s``: seconds since the origin), each started in
    the phase of its start, and ``dropped`` requests the last stage could not start."""
    recorder = Recorder(_setup(shape, worker))
    for outcome in outcomes:
        phase = shape.phase_at(outcome.started_s)
        assert phase is not None
        recorder.start(phase)
        recorder.record(outcome, outcome.started_s, phase.warmup)
    for _ in range(dropped):
        recorder.drop(shape.phases[-1])
    return recorder


def test_stages_attribute_outcomes_by_start_and_time_in_flight_by_overlap() -> None:
    shape = parse_shape("1s:2,1s:2", "1s")
    outcomes = [
        QueryOutcome("w", 0.1, ["MED-1"], started_s=0.2),  # the warm-up's: in no stage
        QueryOutcome("a", 0.5, ["MED-1"], started_s=1.0),  # stage 1, ends in it
        QueryOutcome("b", 1.0, ["MED-1"], started_s=1.5),  # stage 1, ends in stage 2
        QueryOutcome("c", 0.2, None, "timeout", "x", started_s=2.5),  # stage 2
    ]
    report = _recorded(shape, outcomes).report(3.0)
    first, second = report.stages
    assert (first.ok, first.errors, first.completed) == (2, 0, 1)
    assert (second.ok, second.errors, second.completed) == (0, 1, 2)
    assert first.mean_concurrency == pytest.approx(1.0)  # 0.5 + 0.5 s in flight over 1 s
    assert second.mean_concurrency == pytest.approx(0.7)  # 0.5 + 0.2
    assert first.achieved_rate == first.completed_rate == 1.0  # closed loop: completed/s
    assert report.warmup is not None and (report.warmup.requests, report.requests) == (1, 3)


def test_a_stop_cuts_the_stages_windows() -> None:
    shape = parse_shape("1s:2,1s:2")
    recorder = Recorder(_setup(shape))
    recorder.stop(1.5)
    # Ends after the stop, in the drain: in flight in stage 2 until the stop, completed in none.
    recorder.start(shape.phases[1])
    recorder.record(QueryOutcome("a", 0.8, ["MED-1"], started_s=1.2), 1.2)
    _, second = recorder.report(2.0, stopped_early=True).stages
    assert second.ran_s == pytest.approx(0.5) and second.completed == 0
    assert second.mean_concurrency == pytest.approx(0.3 / 0.5)


def test_a_snapshot_mid_run_holds_the_stages_so_far() -> None:
    shape = parse_shape("1s:10/s,1s:10/s")
    outcomes = [QueryOutcome(f"q{i}", 0.05, ["MED-1"], started_s=i / 10) for i in range(12)]
    snapshot = _recorded(shape, outcomes).report(1.25, partial=True)
    first, second = snapshot.stages
    assert first.ran_s == 1.0 and second.ran_s == pytest.approx(0.25)
    assert (first.started, second.started) == (10, 2)
    assert snapshot.requests == 12 and snapshot.wall_s == pytest.approx(1.25)
    # Its rate is of the time it ran, not of the duration: no generator falling behind.
    assert snapshot.workers[0].bound == [] and snapshot.workers[0].status == "running"


def test_workers_stages_merge_by_adding() -> None:
    shape = parse_shape("1s:10/s,ramp:1s:30/s", "1s")
    reports = []
    for worker in range(2):
        outcomes = [
            QueryOutcome(f"q{worker}{i}", 0.01 * (worker + 1), ["MED-1"], started_s=1 + i / 10)
            for i in range(20)
        ]
        reports.append(_recorded(shape, outcomes, dropped=worker, worker=worker).report(3.0))
    merged = merge_load_reports(reports)
    first, ramp = merged.stages
    assert (first.target, first.asked_rate, first.started) == (20, 20, 20)
    assert (ramp.start_target, ramp.target, ramp.asked_rate) == (20, 60, 40)
    assert ramp.dropped == 1 and first.achieved_rate == pytest.approx(20)
    assert first.latencies.count == 20 and first.latency.max_s == pytest.approx(0.02)
    assert merged.warmup is not None and merged.warmup.requests == 0
    assert "2 stages" in str(stages_table(merged.stages, None).title)
    odd = reports[1].model_copy(update={"stages": reports[1].stages[:1]})
    with pytest.raises(ValueError, match="different stages"):
        merge_load_reports([reports[0], odd])


def test_the_progress_line_says_where_the_run_is() -> None:
    shape = parse_shape("ramp:10s:100/s,10s:100/s", "5s:10/s")
    window = LatencyHistogram.of([0.010, 0.020, 0.030, 0.300])
    line = progress_line(shape, 10.0, 2.0, window, 1, 3, 7)
    assert line.startswith(PREFIX)
    assert "stage 1/2 ramp to 100/s (now 55/s)" in line
    assert "2.5/s done" in line and "p50 20.0 ms" in line and "p99 300.0 ms" in line
    assert "3 errors, 7 in flight" in line
    assert "warm-up at 10/s" in progress_line(shape, 1.0, 1.0, LatencyHistogram(), 0, 0, 0)
    assert "no answers" in progress_line(shape, 1.0, 1.0, LatencyHistogram(), 0, 0, 0)
