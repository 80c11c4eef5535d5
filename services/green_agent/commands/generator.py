"""What ``load`` runs once its options are read (:mod:`services.green_agent.commands.load`).

``load`` runs one generator (:func:`load`), or several processes of one run here
(:func:`load_split`).
A generator given a collector (``--report-to``) hands it a snapshot of its figures every
``--report-every`` seconds while it runs, then its final report: the collector's merge and page
are live during the run, and a generator that dies loses at most the last interval
(:mod:`services.green_agent.load.collector`). A snapshot is the whole of the generator's figures
so far, numbered: a snapshot sent twice, or one that arrives after a later one, changes nothing.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from services.green_agent.evaluation.client import wait_for_agent
from services.green_agent.evaluation.dataset import fetch_test_set
from services.green_agent.evaluation.mcp_counters import (
    CacheEffect,
    Unread,
    cache_effect,
    cache_lookups,
)
from services.green_agent.load.client import connect_lean
from services.green_agent.load.outputs import budgets, judge_merged_run, show, with_thresholds
from services.green_agent.load.recorder import Recorder, RunSetup, merge_load_reports
from services.green_agent.load.report import LoadReport
from services.green_agent.load.run import query_pool, run_shape, stopped_by_signals
from services.green_agent.load.shape import Shape
from services.green_agent.load.thresholds import Budget, exit_status
from services.green_agent.load.workers import Share, hand_in, run_workers, send_snapshot
from services.green_agent.settings import GreenSettings


def print_progress(line: str) -> None:
    """Write a progress line to stderr at once (a worker's parent reads it as it comes)."""
    print(line, file=sys.stderr, flush=True)


def worker_arguments(shape: Shape, progress_s: float) -> list[str]:
    """The options that give a worker process the whole run's shape (it takes its share)."""
    return [
        *("--stages", shape.text(), "--warmup", shape.warmup_text()),
        *("--progress", str(progress_s)),
    ]


def cache_fields(effect: CacheEffect | Unread | None) -> dict[str, Any]:
    """The report's result-cache figure, or why it is missing (None: no server named)."""
    if isinstance(effect, Unread):
        return {"result_cache": None, "result_cache_unread": effect.reason}
    return {"result_cache": effect, "result_cache_unread": None}


class _Snapshots:
    """A generator's snapshots to its collector: numbered, its budgets listed, its CPU so far."""

    def __init__(
        self, args: argparse.Namespace, given: list[Budget], authorization: str | None
    ) -> None:
        self._url: str = args.report_to
        self._every_s: float = args.report_every
        self._given = given
        self._authorization = authorization
        self._cpu_before = time.process_time()
        self._session = uuid.uuid4().hex
        self.sent = 0

    def cpu_s(self) -> float:
        """The generator's own CPU since the run began."""
        return time.process_time() - self._cpu_before

    def stamp(self, report: LoadReport) -> LoadReport:
        """``report`` numbered after the snapshots sent before it."""
        update = {
            "sequence": self.sent,
            "session": self._session,
            "report_every_s": self._every_s,
        }
        return report.model_copy(update=update)

    async def __call__(self, recorder: Recorder, now_s: float) -> None:
        figures = recorder.report(now_s, cpu_s=self.cpu_s(), partial=True)
        # Its budgets listed, unjudged: the collector's merge judges them on the whole run.
        snapshot = with_thresholds(self.stamp(figures), self._given, judged=False)
        self.sent += 1
        # One try, bounded by the interval: the next snapshot carries everything this one did.
        await send_snapshot(snapshot, self._url, self._authorization, timeout_s=self._every_s)


async def load(args: argparse.Namespace, settings: GreenSettings) -> int:
    """``load``: one generator (or, with ``--workers N`` alone, a run of N processes here)."""
    if args.workers > 1 and args.worker is None:
        return await load_split(args, settings)
    share = Share(args.worker or 0, args.workers)
    shape = share.shape(args.shape)
    closed = shape.loop == "closed"
    test_set = fetch_test_set(args.data_dir, settings.download_url, settings.download_md5)
    pool = query_pool(args.data_dir, args.queries, test_set.queries, args.seed)
    queries = share.queries(pool)
    setup = RunSetup(
        agent=args.agent,
        protocol=args.protocol,
        shape=shape,
        query_pool=args.queries,
        pool_size=len(queries),
        worker=share.index,
        run=args.run,
    )
    connections = int(shape.peak) if closed else args.max_in_flight
    if args.wait_agent:
        await wait_for_agent(args.agent, args.wait_agent)
    lookups_before = await cache_lookups(args.mcp_url, settings.mcp_metrics_authorization())
    client = await connect_lean(
        args.agent,
        args.protocol,
        settings.timeout_s,
        connections,
        authorization=settings.agent_authorization(),
    )
    given = budgets(args)
    authorization = settings.load_collector_authorization()
    snapshots = _Snapshots(args, given, authorization) if args.report_to is not None else None
    cpu_before = time.process_time()  # the generator's own cost (its report says it)
    try:
        # SIGTERM or Ctrl-C ends the run early, with its report.
        with stopped_by_signals() as stop:
            run = await run_shape(
                client,
                queries,
                test_set.doc_ids,
                setup,
                top_k=args.top_k,
                max_in_flight=args.max_in_flight,
                drain_timeout_s=settings.timeout_s,
                legacy=args.protocol == "0.3",
                stop=stop,
                progress_s=args.progress,
                on_progress=print_progress,
                snapshot_s=args.report_every,
                on_snapshot=snapshots,
            )
            cpu_s = time.process_time() - cpu_before
    finally:
        await client.aclose()
    lookups_after = await cache_lookups(args.mcp_url, settings.mcp_metrics_authorization())
    report = run.report(cpu_s=cpu_s, stopped_early=stop.is_set()).model_copy(
        update=cache_fields(cache_effect(lookups_before, lookups_after))
    )
    # A worker's share is not the run: its budgets are judged once the reports are merged.
    report = with_thresholds(report, given, judged=share.count == 1)
    if snapshots is not None:
        report = snapshots.stamp(report)
    show(report, args)
    if args.report_to is not None:
        await hand_in(report, args.report_to, authorization)
        if given and share.count > 1:
            return await judge_merged_run(args, given, shape.duration_s)
    return exit_status(report.thresholds)


async def load_split(args: argparse.Namespace, settings: GreenSettings) -> int:
    """``load --workers N``: N worker processes at once, their reports merged into one."""
    shape: Shape = args.shape
    for index in range(args.workers):
        Share(index, args.workers).shape(shape)  # splits, or says why
    argv = [
        *("--agent", args.agent, "--top-k", str(args.top_k), "--seed", str(args.seed)),
        *("--protocol", args.protocol, "--data-dir", str(args.data_dir)),
        *worker_arguments(shape, args.progress),
        *("--max-in-flight", str(args.max_in_flight)),
        *("--queries", args.queries, "--run", args.run, "--wait-agent", str(args.wait_agent)),
        # The workers list the budgets in their reports; the merge judges them.
        *(a for b in budgets(args) for a in ("--threshold", b.text)),
    ]
    token = settings.mcp_metrics_authorization()
    lookups_before = await cache_lookups(args.mcp_url, token)
    with stopped_by_signals() as stop, tempfile.TemporaryDirectory() as folder:
        reports = await run_workers(argv, args.workers, Path(folder), stop)
    lookups_after = await cache_lookups(args.mcp_url, token)
    report = merge_load_reports(reports).model_copy(
        update=cache_fields(cache_effect(lookups_before, lookups_after))
    )
    show(report, args)
    return exit_status(report.thresholds)
