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
from services.green_agent.load.report import build_load_report, merge_load_reports
from services.green_agent.load.run import run_shape
from services.green_agent.load.shape import parse_shape
from services.green_agent.load.stages import stage_figures, stages_table

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


async def test_an_open_loop_starts_each_stages_requests_and_keeps_the_warm_up_apart() -> None:
    shape = parse_shape("0.5s:40/s,ramp:1s:80/s,0.5s:20/s", "0.5s:20/s")
    lines: list[str] = []
    run = await run_shape(
        FakeAgent(),
        QUERIES,
        IDS,
        shape,
        top_k=5,
        progress_s=0.4,
        on_progress=lines.append,
    )
    # Counted where each started: on time, the schedule's (a late start near a boundary may
    # fall in the next stage, on a busy machine).
    assert sum(run.started.values()) == 100
    for index, due in {-1: 10, 0: 20, 1: 60, 2: 10}.items():
        assert run.started[index] == pytest.approx(due, abs=1), run.started
    assert len(run.warmup) == run.started[-1] and len(run.warmup) + len(run.outcomes) == 100
    # Every outcome of the warm-up started before the stages, every other one after.
    first_stage = run.origin + shape.warmup_s
    assert all(o.started_s < first_stage for o in run.warmup)
    assert all(o.started_s >= first_stage for o in run.outcomes)
    stages = run.stages()
    assert [s.started for s in stages] == [run.started[i] for i in (0, 1, 2)]
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
    warmup = run.warmup_figures()
    assert warmup is not None and (warmup.target, warmup.ran_s) == (20, 0.5)
    assert warmup.requests == warmup.ok + warmup.errors == len(run.warmup)
    assert warmup.errors == 1  # "text 7" fails
    report = build_load_report(
        run.outcomes,
        run.measured_dropped,
        run.wall_s,
        agent="fake",
        protocol="1.0",
        duration_s=shape.duration_s,
        concurrency=None,
        rate=shape.mean,
        stages=stages,
        warmup=warmup,
    )
    # The warm-up is in no figure: requests, latencies, timeline.
    assert report.requests == len(run.outcomes) == sum(s.started for s in report.stages)
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
    run = await run_shape(agent, QUERIES, IDS, shape, top_k=5)
    assert agent.most == 4
    # In flight as each request starts: one, then four, then one again once the ramp is down
    # to one worker (from 1.75 s; a margin for the last requests of the others to end).
    by_time = [(t - run.origin, n) for t, n in agent.samples]
    assert max(n for t, n in by_time if t < 0.55) == 1
    assert max(n for t, n in by_time if 0.65 < t < 1.15) == 4
    assert max(n for t, n in by_time if t > 1.85) == 1
    one, four, ramp, _ = run.stages()
    assert one.asked_concurrency == 1 and four.asked_concurrency == 4
    assert ramp.asked_concurrency == pytest.approx(2.5)
    assert one.mean_concurrency == pytest.approx(1, rel=0.1)
    assert four.mean_concurrency == pytest.approx(4, rel=0.1)
    assert ramp.mean_concurrency == pytest.approx(2.5, rel=0.15)
    # Completed per second: more workers complete more (how much more is the machine's own
    # figure, a benchmark's business: under a loaded suite one stalled pass halves it).
    assert four.achieved_rate == four.completed_rate > one.achieved_rate
    assert run.warmup == [] and run.warmup_figures() is None


async def test_a_run_stopped_early_reports_what_its_stages_ran() -> None:
    stop = asyncio.Event()
    shape = parse_shape("0.4s:50/s,5s:50/s")
    asyncio.get_running_loop().call_later(0.8, stop.set)
    run = await run_shape(FakeAgent(), QUERIES, IDS, shape, top_k=5, stop=stop)
    first, second = run.stages()
    assert first.ran_s == pytest.approx(0.4) and first.started == 20
    assert second.ran_s == pytest.approx(0.4, abs=0.05)
    assert second.achieved_rate == pytest.approx(50, rel=0.1)


def test_stage_figures_attribute_outcomes_by_start_and_time_in_flight_by_overlap() -> None:
    shape = parse_shape("1s:2,1s:2", "1s")
    origin = 100.0
    outcomes = [
        QueryOutcome("a", 0.5, ["MED-1"], started_s=origin + 1.0),  # stage 1, ends in it
        QueryOutcome("b", 1.0, ["MED-1"], started_s=origin + 1.5),  # stage 1, ends in stage 2
        QueryOutcome("c", 0.2, None, "timeout", "x", started_s=origin + 2.5),  # stage 2
    ]
    started = {-1: 3, 0: 2, 1: 1}
    first, second = stage_figures(shape, outcomes, started, {}, origin, 3.0)
    assert (first.ok, first.errors, first.completed) == (2, 0, 1)
    assert (second.ok, second.errors, second.completed) == (0, 1, 2)
    assert first.mean_concurrency == pytest.approx(1.0)  # 0.5 + 0.5 s in flight over 1 s
    assert second.mean_concurrency == pytest.approx(0.7)  # 0.5 + 0.2
    assert first.achieved_rate == first.completed_rate == 1.0  # closed loop: completed/s


def test_workers_stages_merge_by_adding() -> None:
    shape = parse_shape("1s:10/s,ramp:1s:30/s", "1s")
    origin = 0.0
    reports = []
    for worker in range(2):
        outcomes = [
            QueryOutcome(f"q{worker}{i}", 0.01 * (worker + 1), ["MED-1"], started_s=1 + i / 10)
            for i in range(20)
        ]
        stages = stage_figures(shape, outcomes, {0: 10, 1: 10}, {1: worker}, origin, 3.0)
        reports.append(
            build_load_report(
                outcomes,
                worker,
                2.0,
                agent="a",
                protocol="1.0",
                duration_s=2.0,
                concurrency=None,
                rate=15.0,
                worker=worker,
                split=True,
                stages=stages,
            )
        )
    merged = merge_load_reports(reports)
    first, ramp = merged.stages
    assert (first.target, first.asked_rate, first.started) == (20, 20, 20)
    assert (ramp.start_target, ramp.target, ramp.asked_rate) == (20, 60, 40)
    assert ramp.dropped == 1 and first.achieved_rate == pytest.approx(20)
    assert first.latencies.count == 20 and first.latency.max_s == pytest.approx(0.02)
    assert merged.warmup is None
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
