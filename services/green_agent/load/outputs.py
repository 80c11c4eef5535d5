"""What a load command leaves: the report's files, its tables on the terminal, its exit status.

``load`` and ``load-merge`` (:mod:`services.green_agent.cli`) write the report where ``--out``
(JSON), ``--html`` (:mod:`.html_page`) and ``--csv`` (Locust's files, :mod:`.csv_files`) say,
print its tables, and exit with the verdict of its budgets (``--threshold``, :mod:`.thresholds`):
:data:`~.thresholds.EXIT_BREACHED` when the run breached one, which the terminal names.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from rich.console import Console
from rich.table import Table

from services.common.files import atomic_write_text
from services.green_agent.evaluation.report import LATENCY_COLUMNS, latency_columns, milliseconds
from services.green_agent.load.csv_files import write_csv_files
from services.green_agent.load.html_page import write_load_html
from services.green_agent.load.report import LoadReport, pace_setting, workload_line
from services.green_agent.load.stages import stages_table
from services.green_agent.load.thresholds import (
    Budget,
    exit_status,
    judge,
    pending,
    thresholds_table,
)
from services.green_agent.load.verdict import LATE_WORKER_S, merged_report


def with_thresholds(report: LoadReport, given: Sequence[Budget], judged: bool = True) -> LoadReport:
    """``report`` with the budgets judged on its figures, or only listed (a worker's share)."""
    thresholds = judge(given, report) if judged else pending(given)
    return report.model_copy(update={"thresholds": thresholds})


def budgets(args: argparse.Namespace) -> list[Budget]:
    """The budgets of every ``--threshold``, once each."""
    unique = {b.text: b for group in args.threshold or [] for b in group}
    return list(unique.values())


def show(report: LoadReport, args: argparse.Namespace) -> None:
    """Write the report where ``--out``, ``--html`` and ``--csv`` say, and show it."""
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_text(args.out, report.model_dump_json(indent=2) + "\n")
    if args.html is not None:
        write_load_html(report, args.html)
    if args.csv is not None:
        write_csv_files(report, args.csv)
    console = Console()
    console.print(load_table(report))
    if len(report.workers) > 1:
        console.print(workers_table(report))
    if len(report.stages) > 1 or report.warmup is not None:
        console.print(stages_table(report.stages, report.warmup))
    for reason in report.generator_bound:
        console.print(f"[bold red]generator-bound:[/] {reason}")
    show_verdict(report)


def load_table(report: LoadReport) -> Table:
    """Show a load run as one rich table."""
    setting = pace_setting(report)
    table = Table(title=f"load on {report.agent} (A2A {report.protocol}, {setting})")
    for column in ("sent", "ok", "err", "drop", "rps", *LATENCY_COLUMNS):
        table.add_column(column, justify="right")
    table.add_row(
        str(report.requests),
        str(report.ok),
        str(report.errors),
        str(report.dropped),
        f"{report.throughput_rps:.1f}",
        *(milliseconds(s) for s in latency_columns(report.latency)),
    )
    table.caption = workload_line(report)
    return table


def workers_table(report: LoadReport) -> Table:
    """Each generator of a run: what it sent, at what pace, and what it cost."""
    table = Table(title=f"{len(report.workers)} generators")
    columns = ("worker", "sent", "ok", "err", "drop", "asked/s", "started/s", "p50", "p99")
    for column in (*columns, "CPU/request", "of a core"):
        table.add_column(column, justify="right")
    for w in report.workers:
        table.add_row(
            str(w.worker),
            str(w.requests),
            str(w.ok),
            str(w.errors),
            str(w.dropped),
            "-" if w.asked_rate is None else f"{w.asked_rate:.1f}",
            f"{w.started_rate:.1f}",
            milliseconds(w.latency.p50_s),
            milliseconds(w.latency.p99_s),
            "-" if w.cpu_ms_per_request is None else f"{w.cpu_ms_per_request:.2f} ms",
            "-" if w.core_share is None else f"{w.core_share:.0%}",
        )
    return table


def show_verdict(report: LoadReport) -> None:
    """The budgets, each with its verdict; the breached ones named on stderr too."""
    if not report.thresholds:
        return
    Console().print(thresholds_table(report.thresholds))
    for line in report.breached:
        print(f"budget breached: {line}", file=sys.stderr)


async def judge_merged_run(args: argparse.Namespace, given: list[Budget], duration_s: float) -> int:
    """A worker of a split run: its exit status is the verdict on the collector's merged report.

    So each pod of the chart's Indexed Job fails when the run breached a budget, and the Job
    with it (:mod:`services.green_agent.load.verdict`). It waits ``--verdict-wait`` seconds at
    most, by default the load's ``duration_s`` and :data:`~.verdict.LATE_WORKER_S`.
    """
    wait_s = duration_s + LATE_WORKER_S if args.verdict_wait is None else args.verdict_wait
    console = Console()
    console.print(f"waiting for the run's merged report (at most {wait_s:g} s)")
    run = with_thresholds(await merged_report(args.report_to, wait_s), given)
    console.print(f"the merged run: {run.requests} requests, {run.ok} answered")
    show_verdict(run)
    return exit_status(run.thresholds)
