"""``load-merge``: the reports of a run's workers (the pods of a Job, say) as one."""

from __future__ import annotations

import argparse
from pathlib import Path

from services.green_agent.commands.shared import add_report_options
from services.green_agent.load.outputs import budgets, show, with_thresholds
from services.green_agent.load.recorder import merge_load_reports
from services.green_agent.load.report import LoadReport
from services.green_agent.load.thresholds import exit_status
from services.green_agent.settings import GreenSettings

NAME = "load-merge"
SUMMARY = "merge the JSON reports of a load run's workers into the run's report"
DESCRIPTION = """\
Merge the JSON reports the workers of one load run wrote (load --worker I --workers N --out
FILE): counts added, histograms merged, the run's percentiles read from the merged histograms.
Budgets given here (--threshold) are judged instead of those the reports list; a breach exits 3.

  python -m services.green_agent load-merge w0.json w1.json --out load.json --html load.html
"""


def add_options(parser: argparse.ArgumentParser, settings: GreenSettings) -> None:
    """The workers' reports, where the merge goes, and its budgets."""
    parser.add_argument("reports", type=Path, nargs="+", help="the workers' JSON reports")
    parser.add_argument("--out", type=Path, help="write the merged JSON report here")
    parser.add_argument("--html", type=Path, metavar="PATH", help="and its HTML page here")
    add_report_options(parser)


async def run(args: argparse.Namespace, _: GreenSettings) -> int:
    """Merge, show, and exit with the budgets' verdict.

    The budgets of ``--threshold``, if given, are judged instead of those the reports list.
    """
    reports = [LoadReport.model_validate_json(path.read_text()) for path in args.reports]
    merged = merge_load_reports(reports)
    if args.threshold:
        merged = with_thresholds(merged, budgets(args))
    show(merged, args)
    return exit_status(merged.thresholds)
