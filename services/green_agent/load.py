"""Load generation: the evaluator's client at a fixed concurrency or a fixed rate, for a duration.

Closed loop (``concurrency``): that many workers send back to back. Open loop (``rate``): requests
start on a fixed schedule whatever the latency, up to ``max_in_flight`` outstanding; a request the
schedule cannot start is counted as ``dropped``, so an overloaded agent shows up as drops rather
than as unbounded memory. Both stop starting requests after ``duration_s``, or earlier when the
``stop`` event is set (the CLI sets it on SIGTERM and SIGINT, so a run around an operation of
unknown length still ends with its report), and wait at most the client timeout for those in
flight; the run always ends by itself.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
import time
from collections import Counter
from collections.abc import Iterator, Sequence

from pydantic import BaseModel

from services.green_agent.client import AgentClient
from services.green_agent.evaluator import QueryOutcome, ask_and_check
from services.green_agent.report import LatencyStats, latency_stats
from services.green_agent.timeline import (
    LatencyBin,
    TimelinePoint,
    build_timeline,
    latency_histogram,
)
from services.green_agent.workload import CacheEffect


class LoadReport(BaseModel):
    """What one load run measured.

    ``timeline`` has one point per ``timeline_bucket_s`` of the run (see
    :mod:`services.green_agent.timeline`), ``latency_histogram`` counts the answers between the
    services' Prometheus bucket edges.
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
    # The workload (services.green_agent.workload): which queries, how many asked again, and
    # how much of the run the MCP server's result cache answered (None: its metrics unread).
    query_pool: str = "test"
    pool_size: int = 0
    distinct_queries: int = 0
    repeats: int = 0
    result_cache: CacheEffect | None = None
    # Ended by a signal before ``duration_s`` had passed (``wall_s`` is how long it ran).
    stopped_early: bool = False


class _Run:
    def __init__(self, client: AgentClient, queries: Sequence[tuple[str, str]], top_k: int) -> None:
        self.client = client
        self.queries = itertools.cycle(queries)
        self.top_k = top_k
        self.outcomes: list[QueryOutcome] = []
        self.dropped = 0

    async def one(self, valid_ids: frozenset[str], legacy: bool) -> None:
        query_id, text = next(self.queries)
        outcome = await ask_and_check(
            self.client, query_id, text, self.top_k, valid_ids, legacy=legacy
        )
        self.outcomes.append(outcome)


async def _finish(tasks: set[asyncio.Task[None]], timeout_s: float) -> None:
    """Wait for ``tasks`` at most ``timeout_s``, cancel the rest, surface unexpected errors."""
    if not tasks:
        return
    done, late = await asyncio.wait(tasks, timeout=timeout_s)
    for task in late:
        task.cancel()
    await asyncio.gather(*late, return_exceptions=True)
    for task in done:
        task.result()


async def run_load(
    client: AgentClient,
    queries: Sequence[tuple[str, str]],
    valid_ids: frozenset[str],
    *,
    top_k: int,
    duration_s: float,
    concurrency: int | None = None,
    rate: float | None = None,
    max_in_flight: int = 256,
    drain_timeout_s: float = 60.0,
    legacy: bool = False,
    stop: asyncio.Event | None = None,
) -> tuple[list[QueryOutcome], int, float]:
    """Run one load test, until ``duration_s`` has passed or ``stop`` is set.

    Returns:
        Every outcome, the number of dropped (never started) requests, and the wall time.

    Raises:
        ValueError: Neither or both of ``concurrency`` and ``rate`` were given.

    """
    if (concurrency is None) == (rate is None):
        raise ValueError("give exactly one of concurrency or rate")
    run = _Run(client, queries, top_k)
    stop = stop or asyncio.Event()
    started = time.perf_counter()
    stop_at = started + duration_s

    def going() -> bool:
        return time.perf_counter() < stop_at and not stop.is_set()

    if concurrency is not None:

        async def worker() -> None:
            while going():
                await run.one(valid_ids, legacy)

        workers = {asyncio.create_task(worker()) for _ in range(concurrency)}
        await _finish(workers, duration_s + drain_timeout_s)
    else:
        assert rate is not None
        in_flight: set[asyncio.Task[None]] = set()
        for n in itertools.count():
            due = started + n / rate
            if due >= stop_at:
                break
            await _sleep_unless(stop, due - time.perf_counter())
            if stop.is_set():
                break
            if len(in_flight) >= max_in_flight:
                run.dropped += 1
                continue
            task = asyncio.create_task(run.one(valid_ids, legacy))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)
        # The window is the whole duration, even if the last request started and ended early.
        await _sleep_unless(stop, stop_at - time.perf_counter())
        await _finish(set(in_flight), drain_timeout_s)
    return run.outcomes, run.dropped, time.perf_counter() - started


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[asyncio.Event]:
    """An event that SIGTERM or SIGINT sets while the block runs: pass it to :func:`run_load`.

    A load around an operation of unknown length (a rolling restart) is stopped when the
    operation is done, and still writes its report.
    """
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(signum, stop.set)
    try:
        yield stop
    finally:
        for signum in (signal.SIGTERM, signal.SIGINT):
            loop.remove_signal_handler(signum)


async def _sleep_unless(stop: asyncio.Event, seconds: float) -> None:
    """Sleep ``seconds``, or less if ``stop`` is set meanwhile."""
    if seconds > 0:
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), seconds)


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
