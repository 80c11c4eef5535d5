"""Load reports of made-up outcomes, written by the generator's own recorder.

A test states the outcomes of a run at a constant pace (each with its ``started_s``, seconds
since the run began) and gets the report a generator would write of them: every outcome goes
through :class:`~services.green_agent.load.recorder.Recorder` as the run's would.
"""

from __future__ import annotations

from collections.abc import Sequence

from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.evaluation.mcp_counters import CacheEffect
from services.green_agent.load.recorder import Recorder, RunSetup
from services.green_agent.load.report import LoadReport
from services.green_agent.load.shape import Shape


def report_of(
    outcomes: Sequence[QueryOutcome],
    dropped: int = 0,
    wall_s: float = 1.0,
    *,
    agent: str = "http://agent",
    protocol: str = "1.0",
    duration_s: float | None = None,
    concurrency: int | None = None,
    rate: float | None = None,
    query_pool: str = "test",
    pool_size: int = 0,
    result_cache: CacheEffect | None = None,
    stopped_early: bool = False,
    worker: int = 0,
    cpu_s: float | None = None,
    run: str = "",
) -> LoadReport:
    """The report of ``outcomes``, ``dropped`` requests never started, ended at ``wall_s``.

    The run began at the earliest ``started_s``.
    The pace is ``concurrency`` or else ``rate`` (10/s by default) for ``duration_s`` (default:
    ``wall_s``); with ``stopped_early`` the run stopped at ``wall_s``.
    """
    duration = wall_s if duration_s is None else duration_s
    if concurrency is not None:
        shape = Shape.constant("closed", concurrency, duration)
    else:
        shape = Shape.constant("open", 10.0 if rate is None else rate, duration)
    setup = RunSetup(agent, protocol, shape, query_pool, pool_size, worker, run)
    recorder = Recorder(setup)
    phase = shape.phases[0]
    for _ in range(dropped):
        recorder.drop(phase)
    # The first start is the run's: the outcomes' clock is any perf_counter reading.
    origin = min((o.started_s for o in outcomes), default=0.0)
    for outcome in outcomes:
        recorder.start(phase)
        recorder.record(outcome, outcome.started_s - origin)
    if stopped_early:
        recorder.stop(wall_s)
    return recorder.report(
        wall_s, cpu_s=cpu_s, result_cache=result_cache, stopped_early=stopped_early
    )
