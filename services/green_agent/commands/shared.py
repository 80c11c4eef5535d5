"""Options and outputs several subcommands share.

``--agent``, ``--top-k``, ``--seed``, ``--protocol``, ``--out`` and ``--data-dir`` are the
agent's and the data's, the same for ``eval`` and ``load``; ``--threshold`` and ``--csv`` are a
load report's, the same for ``load`` and ``load-merge``; a JSON report is written whole or not
at all (:func:`~services.common.files.atomic_write_text`).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from services.common.files import atomic_write_text
from services.green_agent.evaluation.client import A2AVersion
from services.green_agent.load.thresholds import EXIT_BREACHED, budget_argument
from services.green_agent.load.verdict import LATE_WORKER_S
from services.green_agent.settings import GreenSettings


def add_client_options(parser: argparse.ArgumentParser, settings: GreenSettings) -> None:
    """The agent asked and how (``eval`` and ``load``)."""
    parser.add_argument("--agent", required=True, help="the agent's base URL (its card is there)")
    parser.add_argument(
        "--top-k", type=int, default=5, choices=range(1, 101), metavar="1..100", help="ids asked"
    )
    parser.add_argument("--seed", type=int, default=42, help="the seed of the queries' order")
    protocols: list[A2AVersion] = ["1.0", "0.3"]
    parser.add_argument(
        "--protocol",
        choices=protocols,
        default=settings.protocol,
        help="A2A 1.0, or 0.3 as the a2a-sdk 0.3 clients of green agents in the wild speak it",
    )
    parser.add_argument("--out", type=Path, help="write the JSON report here")
    parser.add_argument(
        "--data-dir", type=Path, default=settings.data_dir, help="the NFCorpus folder (BEIR)"
    )


def add_report_options(sub: argparse.ArgumentParser, worker: bool = False) -> None:
    """``--threshold`` and ``--csv``, of ``load`` and ``load-merge``; ``--verdict-wait`` too."""
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
    if worker:
        sub.add_argument(
            "--verdict-wait",
            type=float,
            metavar="SECONDS",
            help="a worker with --report-to and --threshold: how long it waits at most for the "
            "run's merged report, to judge the budgets on (default: the load's duration + "
            f"{LATE_WORKER_S:g})",
        )


def write_json(report: BaseModel | dict[str, Any], out: Path | None) -> None:
    """Write ``report`` as indented JSON to ``out`` (nothing when None), creating its folder."""
    if out is None:
        return
    out.parent.mkdir(parents=True, exist_ok=True)
    text = (
        report.model_dump_json(indent=2)
        if isinstance(report, BaseModel)
        else json.dumps(report, indent=2)
    )
    atomic_write_text(out, text + "\n")
