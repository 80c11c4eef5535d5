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
from collections.abc import Awaitable, Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from services.green_agent.evaluation.client import AgentClient
from services.green_agent.evaluation.evaluator import QueryOutcome, ask_and_check
from services.green_agent.evaluation.mcp_counters import CacheEffect
from services.green_agent.load.progress import Meter, show_progress
from services.green_agent.load.recorder import Recorder, RunSetup
from services.green_agent.load.report import LoadReport
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
    def __init__(
        self,
        client: AgentClient,
        queries: Sequence[tuple[str, str]],
        top_k: int,
        recorder: Recorder,
        origin: float,
        on_outcome: Callable[[QueryOutcome, bool], None] | None,
    ) -> None:
        self.client = client
        self.queries = itertools.cycle(queries)
        self.top_k = top_k
        self.recorder = recorder
        self.origin = origin
        self.on_outcome = on_outcome
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
        # Folded into the figures as it ends, and not kept: memory does not grow with the run.
        self.recorder.record(outcome, outcome.started_s - self.origin, warm)
        if self.meter is not None:
            self.meter.note(outcome)
        if self.on_outcome is not None:
            self.on_outcome(outcome, warm)


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
    """What a run along a shape did: its figures, and when it ended.

    ``origin`` is ``time.perf_counter()`` at the start, ``ended_s`` when it stopped starting
    requests and ``finished_s`` when the last one ended (the drain included), both in seconds
    since ``origin``.
    """

    recorder: Recorder
    origin: float
    ended_s: float
    finished_s: float

    def report(
        self,
        cpu_s: float | None = None,
        result_cache: CacheEffect | None = None,
        stopped_early: bool = False,
    ) -> LoadReport:
        """The run's report (:meth:`~services.green_agent.load.recorder.Recorder.report`)."""
        return self.recorder.report(
            self.finished_s, cpu_s=cpu_s, result_cache=result_cache, stopped_early=stopped_early
        )


#: What a running generator does with its figures so far, every ``snapshot_s`` seconds: the
#: recorder and the seconds since the origin (a generator hands the snapshot to its collector).
Snapshot = Callable[[Recorder, float], Awaitable[None]]


async def run_shape(
    client: AgentClient,
    queries: Sequence[tuple[str, str]],
    valid_ids: frozenset[str],
    setup: RunSetup,
    *,
    top_k: int,
    max_in_flight: int = 256,
    drain_timeout_s: float = 60.0,
    legacy: bool = False,
    stop: asyncio.Event | None = None,
    progress_s: float = 0.0,
    on_progress: Callable[[str], None] | None = None,
    snapshot_s: float = 0.0,
    on_snapshot: Snapshot | None = None,
    on_outcome: Callable[[QueryOutcome, bool], None] | None = None,
) -> LoadRun:
    """Run one load test along ``setup.shape``, until its end or until ``stop`` is set.

    An open loop starts each request at its time on the shape's schedule
    (:meth:`~services.green_agent.load.shape.Shape.starts`); a closed loop keeps as many
    workers sending as the shape asks at the time (:meth:`~.shape.Shape.workers_at`): a worker
    beyond that finishes its request and waits until the shape wants it again. Each outcome
    goes into the run's :class:`~services.green_agent.load.recorder.Recorder` as it ends, then
    to ``on_outcome`` (with whether it is the warm-up's), if given. With ``on_progress``, a
    progress line (:mod:`services.green_agent.load.progress`) goes to it every ``progress_s``
    seconds; with ``on_snapshot``, the figures so far every ``snapshot_s`` seconds.
    """
    shape = setup.shape
    recorder = Recorder(setup)
    origin = time.perf_counter()
    run = _Run(client, queries, top_k, recorder, origin, on_outcome)
    stop = stop or asyncio.Event()
    total_s = shape.total_s

    async def note_stop() -> None:
        await stop.wait()
        recorder.stop(time.perf_counter() - origin)

    async def snapshots(every_s: float, hand: Snapshot) -> None:
        while True:
            await asyncio.sleep(every_s)
            await hand(recorder, time.perf_counter() - origin)

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
    if on_snapshot is not None and snapshot_s > 0:
        watchers.append(asyncio.create_task(snapshots(snapshot_s, on_snapshot)))
    try:
        if shape.loop == "closed":

            async def worker(k: int) -> None:
                # Worker k sends while the shape asks for k workers or more.
                while not stop.is_set():
                    now = time.perf_counter() - origin
                    phase = shape.phase_at(now)
                    if phase is None:
                        return
                    if phase.pace(now) + 0.5 >= k:
                        recorder.start(phase)
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
                    recorder.drop(phase)
                    continue
                recorder.start(phase)
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
    return LoadRun(
        recorder=recorder,
        origin=origin,
        ended_s=recorder.ended_s,
        finished_s=time.perf_counter() - origin,
    )


@contextlib.contextmanager
def stopped_by_signals() -> Iterator[asyncio.Event]:
    """An event that SIGTERM or SIGINT sets while the block runs: pass it to :func:`run_shape`.

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
