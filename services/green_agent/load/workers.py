"""One load run from several generator processes: each worker's share, and running them here.

One generator tops out near a few hundred requests per second per core, and a release scaled
out answers more: a run is split across ``count`` workers, each a process of its own (here
:func:`run_workers` starts them; in a cluster each is one pod of an Indexed Job, its index in
``JOB_COMPLETION_INDEX``). Worker ``index`` asks its share of the pace (the rate divided evenly,
the concurrency spread with the remainder on the first workers; so for each stage of a shape
and its warm-up) and draws every ``count``-th query of the seeded pool from ``index`` on, so the
workers ask disjoint queries and together the run's. Each writes its own report;
:func:`~services.green_agent.load.recorder.merge_load_reports` makes them one.
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import httpx

from services.green_agent.load.progress import PREFIX
from services.green_agent.load.report import LoadReport
from services.green_agent.load.shape import Shape

T = TypeVar("T")
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Share:
    """Worker ``index`` of ``count``: its part of the pace."""

    index: int
    count: int

    def __post_init__(self) -> None:
        """Refuse an index outside ``0..count-1``."""
        if not 0 <= self.index < self.count:
            raise ValueError(
                f"worker {self.index} of {self.count}: the index is 0..{self.count - 1}"
            )

    def concurrency(self, total: int) -> int:
        """Its part of ``total`` requests in flight; :class:`ValueError` if it would get none."""
        if total < self.count:
            raise ValueError(f"concurrency {total} cannot be split across {self.count} workers")
        return total // self.count + (1 if self.index < total % self.count else 0)

    def rate(self, total: float) -> float:
        """Its part of ``total`` requests started per second."""
        return total / self.count

    def shape(self, total: Shape) -> Shape:
        """Its part of a shape: each stage's target and the warm-up's, split as the pace is.

        A rate is divided evenly; a concurrency spread as :meth:`concurrency` spreads it (a
        target of 0, a pause, stays 0).
        """
        if total.loop == "open":
            return total.scaled(self.rate)
        return total.scaled(lambda target: float(self.concurrency(int(target)) if target else 0))

    def queries(self, pool: Sequence[T]) -> list[T]:
        """Its slice of the query pool: every ``count``-th from ``index`` on."""
        return list(pool[self.index :: self.count])


def worker_argv(argv: Sequence[str], index: int, count: int, out: Path) -> list[str]:
    """The command of worker ``index``: the run's own ``load`` arguments, as that worker.

    ``argv`` is the run's command line after ``load``, without ``--workers``, ``--out``,
    ``--html`` and ``--mcp-url`` (the run reads the server's counters and writes the report).
    """
    return [
        sys.executable,
        "-m",
        "services.green_agent",
        "load",
        *argv,
        "--workers",
        str(count),
        "--worker",
        str(index),
        "--out",
        str(out),
    ]


async def run_workers(
    argv: Sequence[str], count: int, folder: Path, stop: asyncio.Event | None = None
) -> list[LoadReport]:
    """Run ``count`` worker processes at once and read their reports (``folder``/worker-I.json).

    ``folder`` exists (a temporary one, say).

    When ``stop`` is set, every worker gets SIGTERM: each ends early with its report. Each
    worker's progress lines go to stderr as they come, with its index.

    Raises:
        RuntimeError: a worker failed (its exit status and the end of its output).

    """
    outs = [folder / f"worker-{i}.json" for i in range(count)]
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    processes = [
        await asyncio.create_subprocess_exec(
            *worker_argv(argv, i, count, out),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
            env=env,
        )
        for i, out in enumerate(outs)
    ]

    async def forward_stop() -> None:
        if stop is not None:
            await stop.wait()
            for process in processes:
                if process.returncode is None:
                    process.send_signal(signal.SIGTERM)

    async def read(index: int, process: asyncio.subprocess.Process) -> bytes:
        assert process.stdout is not None
        lines = []
        async for line in process.stdout:
            lines.append(line)
            if line.startswith(PREFIX.encode()):
                print(f"worker {index}: {line.decode(errors='replace')}", end="", file=sys.stderr)
        await process.wait()
        return b"".join(lines)

    forwarding = asyncio.create_task(forward_stop())
    try:
        outputs = await asyncio.gather(*(read(i, p) for i, p in enumerate(processes)))
    finally:
        forwarding.cancel()
    for i, (process, output) in enumerate(zip(processes, outputs, strict=True)):
        if process.returncode != 0:
            tail = output.decode(errors="replace")[-2000:]
            raise RuntimeError(f"load worker {i} exited with {process.returncode}: {tail}")
    texts = await asyncio.gather(*(asyncio.to_thread(out.read_text) for out in outs))
    return [LoadReport.model_validate_json(text) for text in texts]


def _reports_url(url: str) -> str:
    """The collector's ``/reports``, from its base URL or from that URL itself."""
    return url if url.rstrip("/").endswith("/reports") else url.rstrip("/") + "/reports"


#: Tries at handing a report in, the first delay (doubled each time): a collector that is still
#: starting, or restarting, gets about half a minute.
HAND_IN_TRIES, HAND_IN_DELAY_S = 6, 1.0


async def hand_in(report: LoadReport, url: str, authorization: str | None = None) -> None:
    """POST ``report`` to a load collector (``url``: its base or its ``/reports``).

    ``authorization`` is the ``Authorization`` header the collector requires, if it does
    (:meth:`~services.green_agent.settings.GreenSettings.load_collector_authorization`).
    Retries refused connections and 5xx answers; a 4xx says the report was refused, and why.

    Raises:
        RuntimeError: the collector refused the report, or never answered.

    """
    target = _reports_url(url)
    body = report.model_dump_json().encode()
    headers = {"content-type": "application/json"}
    if authorization is not None:
        headers["authorization"] = authorization
    delay, problem = HAND_IN_DELAY_S, ""
    async with httpx.AsyncClient(timeout=30) as http:
        for attempt in range(HAND_IN_TRIES):
            try:
                answer = await http.post(target, content=body, headers=headers)
            except httpx.TransportError as e:
                problem = f"{type(e).__name__}: {e}"
            else:
                if answer.status_code < 500:
                    if answer.is_success:
                        return
                    raise RuntimeError(f"the collector refused the report: {answer.text[:500]}")
                problem = f"HTTP {answer.status_code}"
            if attempt < HAND_IN_TRIES - 1:
                await asyncio.sleep(delay)
                delay *= 2
    raise RuntimeError(f"no collector answered at {target}: {problem}")


async def send_snapshot(
    report: LoadReport, url: str, authorization: str | None, timeout_s: float
) -> None:
    """POST a running generator's snapshot to its collector: once, within ``timeout_s``.

    A snapshot that does not arrive is not retried, and the run goes on: the next one holds
    every figure this one did. What went wrong is logged, not raised.
    """
    headers = {"content-type": "application/json"}
    if authorization is not None:
        headers["authorization"] = authorization
    body = report.model_dump_json().encode()
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as http:
            answer = await http.post(_reports_url(url), content=body, headers=headers)
    except httpx.HTTPError as e:
        _log.warning("snapshot %d not handed in: %s: %s", report.sequence, type(e).__name__, e)
        return
    if not answer.is_success:
        _log.warning(
            "snapshot %d refused: HTTP %d %s",
            report.sequence,
            answer.status_code,
            answer.text[:300],
        )
