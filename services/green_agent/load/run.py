"""Load generation: the evaluator's client at a fixed concurrency or a fixed rate, for a duration.

Closed loop (``concurrency``): that many workers send back to back. Open loop (``rate``): requests
start on a fixed schedule whatever the latency, up to ``max_in_flight`` outstanding; a request the
schedule cannot start is counted as ``dropped``, so an overloaded agent shows up as drops rather
than as unbounded memory. Both stop starting requests after ``duration_s``, or earlier when the
``stop`` event is set (the CLI sets it on SIGTERM and SIGINT, so a run around an operation of
unknown length still ends with its report), and wait at most the client timeout for those in
flight; the run always ends by itself.

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
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Literal

from services.green_agent.evaluation.client import AgentClient
from services.green_agent.evaluation.evaluator import QueryOutcome, ask_and_check
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
