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
from pathlib import Path

from rich.console import Console

from services.green_agent.load.csv_files import write_csv_files
from services.green_agent.load.html_page import write_load_html
from services.green_agent.load.report import LoadReport, load_table, workers_table
from services.green_agent.load.thresholds import (
    EXIT_BREACHED,
    Budget,
    budget_argument,
    exit_status,
    judge,
    pending,
    thresholds_table,
)
from services.green_agent.load.verdict import merged_report


def with_thresholds(report: LoadReport, given: Sequence[Budget], judged: bool = True) -> LoadReport:
    """``report`` with the budgets judged on its figures, or only listed (a worker's share)."""
    thresholds = judge(given, report) if judged else pending(given)
    return report.model_copy(update={"thresholds": thresholds})


def add_report_options(sub: argparse.ArgumentParser) -> None:
    """``--threshold`` and ``--csv``, of ``load`` and ``load-merge``."""
    sub.add_argument(
        "--threshold",
        type=budget_argument,
        action="append",
        metavar="BUDGETS",
        help="a budget the run must meet, e.g. 'p99<2s', 'errors<1%%' or 'rate>=40' (answered "
        "per second); several: repeat it, or separate them by commas. A breach exits "
        f"{EXIT_BREACHED}",
    )
    sub.add_argument(
        "--csv",
        type=Path,
        metavar="PREFIX",
        help="also write PREFIX_stats.csv, PREFIX_stats_history.csv and PREFIX_failures.csv, "
        "as Locust's --csv does",
    )


def budgets(args: argparse.Namespace) -> list[Budget]:
    """The budgets of every ``--threshold``, once each."""
    unique = {b.text: b for group in args.threshold or [] for b in group}
    return list(unique.values())


def show(report: LoadReport, args: argparse.Namespace) -> None:
    """Write the report where ``--out``, ``--html`` and ``--csv`` say, and show it."""
    if args.out is not None:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report.model_dump_json(indent=2) + "\n", encoding="utf-8")
    if args.html is not None:
        write_load_html(report, args.html)
    if args.csv is not None:
        write_csv_files(report, args.csv)
    console = Console()
    console.print(load_table(report))
    if len(report.workers) > 1:
        console.print(workers_table(report))
    for reason in report.generator_bound:
        console.print(f"[bold red]generator-bound:[/] {reason}")
    show_verdict(report)


def show_verdict(report: LoadReport) -> None:
    """The budgets, each with its verdict; the breached ones named on stderr too."""
    if not report.thresholds:
        return
    Console().print(thresholds_table(report.thresholds))
    for line in report.breached:
        print(f"budget breached: {line}", file=sys.stderr)


async def judge_merged_run(collector: str, given: list[Budget], wait_s: float) -> int:
    """A worker of a split run: its exit status is the verdict on the collector's merged report.

    So each pod of the chart's Indexed Job fails when the run breached a budget, and the Job
    with it (:mod:`services.green_agent.load.verdict`).
    """
    console = Console()
    console.print(f"waiting for the run's merged report (at most {wait_s:g} s)")
    run = with_thresholds(await merged_report(collector, wait_s), given)
    console.print(f"the merged run: {run.requests} requests, {run.ok} answered")
    show_verdict(run)
    return exit_status(run.thresholds)
