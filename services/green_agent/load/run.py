"""Load generation: the evaluator's client along a load shape (a rate or a concurrency over time).

Closed loop (a concurrency): that many workers send back to back. Open loop (a rate): requests
start on a schedule whatever the latency, up to ``max_in_flight`` outstanding; a request the
schedule cannot start is counted as ``dropped``, so an overloaded agent shows up as drops rather
than as unbounded memory. The pace follows a shape (:mod:`services.green_agent.load.shape`):
stages held or ramped, after a warm-up whose outcomes are kept apart; a constant ``--rate`` or
``--concurrency`` for ``--duration`` is a shape of one step. Both stop starting requests at the
shape's end, or earlier when the ``stop`` event is set (the CLI sets it on SIGTERM and SIGINT, so
a run around an operation of unknown length still ends with its report), and wait at most the
client timeout for those in flight; the run always ends by itself.

Its workload. A load that repeats the test queries measures the result cache, not the service:
after the first round every answer is a cache hit and no query is encoded or searched. The load
therefore draws from every NFCorpus query (train, dev and test; the README's Load section says
how many distinct texts that is) in a seeded order, repeats only once the pool is used up, and
says how many it repeated; with the MCP server named, it reads the server's cache lookups before
and after the run (:mod:`services.green_agent.evaluation.mcp_counters`) and reports the hit ratio
the run caused (:mod:`services.green_agent.load.report`).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import signal
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from services.green_agent.evaluation.client import AgentClient
from services.green_agent.evaluation.evaluator import QueryOutcome, ask_and_check
from services.green_agent.load.progress import Meter, show_progress
from services.green_agent.load.shape import Shape
from services.green_agent.load.stages import (
    StageFigures,
    WarmupFigures,
    stage_figures,
    warmup_figures,
)
from services.nfcorpus.dataset import load_queries

QueryPool = Literal["all", "test"]


def query_pool(
    data_dir: Path, pool: QueryPool, test_queries: dict[str, str], seed: int
) -> list[tuple[str, str]]:
    """(id, text) of every distinct query text of ``pool``, in a seeded order."""
    queries = load_queries(data_dir) if pool == "all" else test_queries
    by_text: dict[str, str] = {}
    for query_id in sorted(queries):  # the first id of a text that several ids share
        by_text.setdefault(queries[query_id], query_id)
    distinct = sorted((query_id, text) for text, query_id in by_text.items())
    random.Random(seed).shuffle(distinct)
    return distinct


class _Run:
    def __init__(self, client: AgentClient, queries: Sequence[tuple[str, str]], top_k: int) -> None:
        self.client = client
        self.queries = itertools.cycle(queries)
        self.top_k = top_k
        self.outcomes: list[QueryOutcome] = []
        self.warmup: list[QueryOutcome] = []
        self.in_flight = 0
        self.meter: Meter | None = None

    async def one(self, valid_ids: frozenset[str], legacy: bool, warm: bool = False) -> None:
        query_id, text = next(self.queries)
        self.in_flight += 1
        try:
            outcome = await ask_and_check(
                self.client, query_id, text, self.top_k, valid_ids, legacy=legacy
            )
        finally:
            self.in_flight -= 1
        (self.warmup if warm else self.outcomes).append(outcome)
        if self.meter is not None:
            self.meter.note(outcome)


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


@dataclass
class LoadRun:
    """What a run along a shape did: its outcomes, the warm-up's apart, and when.

    ``started`` and ``dropped`` count requests by stage index (-1: the warm-up); ``origin`` is
    ``time.perf_counter()`` at the start, ``ended_s`` when it stopped starting requests and
    ``finished_s`` when the last one ended (the drain included), both in seconds since ``origin``.
    """

    shape: Shape
    outcomes: list[QueryOutcome]
    warmup: list[QueryOutcome]
    started: dict[int, int]
    dropped: dict[int, int]
    origin: float
    ended_s: float
    finished_s: float

    @property
    def measured_dropped(self) -> int:
        """Requests the schedule could not start after the warm-up."""
        return sum(n for index, n in self.dropped.items() if index >= 0)

    @property
    def wall_s(self) -> float:
        """Seconds from the end of the warm-up to the end of the run (0: it never got there)."""
        warmup_s = self.shape.warmup_s
        return self.finished_s - warmup_s if self.ended_s > warmup_s else 0.0

    def stages(self) -> list[StageFigures]:
        """Each stage's figures (:mod:`services.green_agent.load.stages`)."""
        return stage_figures(
            self.shape, self.outcomes, self.started, self.dropped, self.origin, self.ended_s
        )

    def warmup_figures(self) -> WarmupFigures | None:
        """The warm-up's figures (None: no warm-up)."""
        return warmup_figures(self.shape, self.warmup, self.dropped.get(-1, 0), self.ended_s)


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
    """Run one load test at a constant pace, until ``duration_s`` has passed or ``stop`` is set.

    Returns:
        Every outcome, the number of dropped (never started) requests, and the wall time.

    Raises:
        ValueError: Neither or both of ``concurrency`` and ``rate`` were given.

    """
    if (concurrency is None) == (rate is None):
        raise ValueError("give exactly one of concurrency or rate")
    if concurrency is not None:
        shape = Shape.constant("concurrency", concurrency, duration_s)
    else:
        assert rate is not None
        shape = Shape.constant("rate", rate, duration_s)
    run = await run_shape(
        client,
        queries,
        valid_ids,
        shape,
        top_k=top_k,
        max_in_flight=max_in_flight,
        drain_timeout_s=drain_timeout_s,
        legacy=legacy,
        stop=stop,
    )
    return run.outcomes, run.measured_dropped, run.wall_s


async def run_shape(
    client: AgentClient,
    queries: Sequence[tuple[str, str]],
    valid_ids: frozenset[str],
    shape: Shape,
    *,
    top_k: int,
    max_in_flight: int = 256,
    drain_timeout_s: float = 60.0,
    legacy: bool = False,
    stop: asyncio.Event | None = None,
    progress_s: float = 0.0,
    on_progress: Callable[[str], None] | None = None,
) -> LoadRun:
    """Run one load test along ``shape``, until its end or until ``stop`` is set.

    An open loop starts each request at its time on the shape's schedule
    (:meth:`~services.green_agent.load.shape.Shape.starts`); a closed loop keeps as many
    workers sending as the shape asks at the time (:meth:`~.shape.Shape.workers_at`): a worker
    beyond that finishes its request and waits until the shape wants it again. With
    ``on_progress``, a progress line (:mod:`services.green_agent.load.progress`) goes to it
    every ``progress_s`` seconds.
    """
    run = _Run(client, queries, top_k)
    stop = stop or asyncio.Event()
    started: dict[int, int] = {p.index: 0 for p in shape.phases}
    dropped: dict[int, int] = {p.index: 0 for p in shape.phases}
    origin = time.perf_counter()
    total_s = shape.total_s
    stopped: list[float] = []

    async def note_stop() -> None:
        await stop.wait()
        stopped.append(time.perf_counter() - origin)

    watchers = [asyncio.create_task(note_stop())]
    if on_progress is not None and progress_s > 0:
        run.meter = Meter()
        watchers.append(
            asyncio.create_task(
                show_progress(
                    run.meter, shape, origin, progress_s, lambda: run.in_flight, on_progress
                )
            )
        )
    try:
        if shape.kind == "concurrency":

            async def worker(k: int) -> None:
                # Worker k sends while the shape asks for k workers or more.
                while not stop.is_set():
                    now = time.perf_counter() - origin
                    phase = shape.phase_at(now)
                    if phase is None:
                        return
                    if phase.pace(now) + 0.5 >= k:
                        started[phase.index] += 1
                        await run.one(valid_ids, legacy, phase.warmup)
                        continue
                    wake = shape.next_active(k, now)
                    if wake is None:
                        return
                    await _sleep_unless(stop, wake - now)

            peak = int(shape.peak)
            workers = {asyncio.create_task(worker(k)) for k in range(1, peak + 1)}
            await _finish(workers, total_s + drain_timeout_s)
        else:
            in_flight: set[asyncio.Task[None]] = set()
            last = shape.phases[-1]
            for due, _ in shape.starts():
                await _sleep_unless(stop, origin + due - time.perf_counter())
                if stop.is_set():
                    break
                # Counted where it starts, not where it was due: a generator that falls behind
                # shows in its stages' achieved rates.
                phase = shape.phase_at(time.perf_counter() - origin) or last
                if len(in_flight) >= max_in_flight:
                    dropped[phase.index] += 1
                    continue
                started[phase.index] += 1
                task = asyncio.create_task(run.one(valid_ids, legacy, phase.warmup))
                in_flight.add(task)
                task.add_done_callback(in_flight.discard)
            # The window is the whole shape, even if the last request started and ended early.
            await _sleep_unless(stop, origin + total_s - time.perf_counter())
            await _finish(set(in_flight), drain_timeout_s)
    finally:
        for watcher in watchers:
            watcher.cancel()
        await asyncio.gather(*watchers, return_exceptions=True)
    ended_s = min(total_s, *stopped) if stopped else total_s
    return LoadRun(
        shape=shape,
        outcomes=run.outcomes,
        warmup=run.warmup,
        started=started,
        dropped=dropped,
        origin=origin,
        ended_s=ended_s,
        finished_s=time.perf_counter() - origin,
    )


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
