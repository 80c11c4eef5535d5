"""``load``: load an agent at a pace over time, as one generator or several; its options and checks.

What it runs is :mod:`services.green_agent.commands.generator`. A shape that does not read, or
options that do not go together, are argparse's error: exit status 2, saying which and why.
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path
from typing import get_args

from services.green_agent.commands.generator import load
from services.green_agent.commands.shared import add_client_options, add_report_options
from services.green_agent.load.run import QueryPool
from services.green_agent.load.shape import (
    Shape,
    ShapeError,
    parse_stages,
    parse_warmup,
    with_warmup,
)
from services.green_agent.settings import GreenSettings

NAME = "load"
SUMMARY = "load an agent at a rate or a concurrency over time; report, budgets, exit status"
#: The longest run, its warm-up included.
MAX_LOAD_SECONDS = 3600.0
DESCRIPTION = """\
Load an agent over A2A as the evaluator asks it, every answer checked against the evaluator's
contract, at a constant pace (--rate R or --concurrency C, for --duration SECONDS) or along a
shape of stages (--stages), each DURATION seconds at a TARGET:

  STAGE[,STAGE...]   STAGE = [ramp:]DURATION:TARGET (a step holds TARGET from its start; a ramp
                     goes linearly from the previous stage's target, or the warm-up's, or 0)
  DURATION           seconds: 30, 30s, 1.5m, 1h
  TARGET             20/s: a rate (open loop, requests started per second); 8: a concurrency
                     (closed loop, requests in flight); all stages of one kind

  python -m services.green_agent load --agent URL --rate 20 --duration 60 --html load.html
  python -m services.green_agent load --agent URL --stages 10s:20/s,ramp:20s:100/s,30s:100/s \\
      --warmup 10s --threshold 'p99<1s,errors<1%'

--warmup DURATION[:TARGET] first runs that long, at the first stage's target or TARGET: its
requests are counted as the warm-up's and left out of every other figure of the report. The
report (--out JSON, --html page, --csv Locust's files, and tables here) shows the whole run, each
stage and each generator. A progress line goes to stderr every --progress seconds. Budgets
(--threshold) judge the run: a breach exits 3, naming the budget; otherwise the exit status is 0
whatever the errors. SIGTERM or Ctrl-C ends the run early, with its report.

--workers N runs N generator processes here, sharing the pace and the queries, and merges their
reports. --worker I --workers N runs worker I alone (a pod of a Kubernetes Indexed Job): with
--report-to URL it hands a load-collect server its figures as it runs (every --report-every
seconds) and its report at the end; given budgets, it then judges them on the collector's merge
of the whole run.
"""


def _stages_argument(text: str) -> Shape:
    """``--stages``: the shape, or argparse's error (exit 2) with what does not read."""
    try:
        loop, stages = parse_stages(text)
        return Shape(loop, stages)
    except ShapeError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _warmup_argument(text: str) -> str:
    """``--warmup``: the text, once it reads (its target is checked against the stages later)."""
    try:
        parse_warmup(text)
    except ShapeError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def interval_argument(text: str) -> float:
    """``--report-every``: 0 (no snapshots) or a finite number of seconds."""
    try:
        seconds = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not (math.isfinite(seconds) and seconds >= 0):
        raise argparse.ArgumentTypeError(f"0 (none) or a number of seconds, not {text!r}")
    return seconds


def add_options(parser: argparse.ArgumentParser, settings: GreenSettings) -> None:
    """The agent, the pace, the workload, the generators, the report and its budgets."""
    add_client_options(parser, settings)
    _add_pace_options(parser)
    parser.add_argument(
        "--max-in-flight",
        type=int,
        default=256,
        help="open loop: requests outstanding at most; one due beyond them is dropped, counted",
    )
    parser.add_argument(
        "--queries",
        choices=get_args(QueryPool),
        default="all",
        help="every NFCorpus query (train, dev, test; the default) or the 323 test queries only",
    )
    parser.add_argument(
        "--mcp-url", help="the MCP server behind the agent: its cache hit ratio is reported"
    )
    parser.add_argument(
        "--html",
        type=Path,
        metavar="PATH",
        help="also write the report as one self-contained HTML page (charts, failures) here",
    )
    parser.add_argument(
        "--workers",
        type=int,
        default=1,
        help="generator processes sharing the pace and the queries; their reports merge into one",
    )
    parser.add_argument(
        "--worker",
        type=int,
        help="run as this worker (0..workers-1) only, e.g. a Job pod's JOB_COMPLETION_INDEX",
    )
    parser.add_argument(
        "--run",
        default="",
        help="name of the run its report belongs to (a collector takes only its own run's)",
    )
    parser.add_argument(
        "--wait-agent",
        type=float,
        default=0.0,
        metavar="SECONDS",
        help="first wait this long at most for the agent's card (a Job started with its release)",
    )
    parser.add_argument(
        "--report-to",
        metavar="URL",
        help="hand the figures to a load collector's /reports as the run goes and when it ends "
        "(load-collect)",
    )
    parser.add_argument(
        "--report-every",
        type=interval_argument,
        default=5.0,
        metavar="SECONDS",
        help="with --report-to: hand the collector the figures so far this often, so its report "
        "and page are live and a generator that dies loses at most one interval; 0: none",
    )
    add_report_options(parser, worker=True)


def _add_pace_options(load: argparse.ArgumentParser) -> None:
    """Add the options of the pace over time to the ``load`` command.

    One of ``--concurrency``, ``--rate`` and ``--stages``; ``--duration`` (with the first two),
    ``--warmup`` and ``--progress``.
    """
    pace = load.add_mutually_exclusive_group(required=True)
    pace.add_argument("--concurrency", type=int, help="closed loop: requests in flight")
    pace.add_argument("--rate", type=float, help="open loop: requests started per second")
    pace.add_argument(
        "--stages",
        type=_stages_argument,
        metavar="STAGE[,STAGE...]",
        help="a load shape instead: STAGE is [ramp:]DURATION:TARGET, e.g. 10s:20/s,ramp:20s:100/s",
    )
    load.add_argument(
        "--duration", type=float, help="seconds of load (with --rate or --concurrency)"
    )
    load.add_argument(
        "--warmup",
        type=_warmup_argument,
        default="0",
        metavar="DURATION[:TARGET]",
        help="first run this long (at the first stage's target, or TARGET), left out of the figures",
    )
    load.add_argument(
        "--progress",
        type=float,
        default=5.0,
        metavar="SECONDS",
        help="a progress line on stderr this often (rate, p50/p99, errors, in flight); 0: none",
    )


def shape_of(args: argparse.Namespace, parser: argparse.ArgumentParser, max_s: float) -> Shape:
    """The shape ``load`` asks, its warm-up included, or the parser's error saying why not.

    ``max_s`` bounds the whole run, the warm-up included.
    """
    if args.stages is not None and args.duration is not None:
        parser.error("--duration goes with --rate or --concurrency: stages have their own")
    if args.stages is None and args.duration is None:
        parser.error("--rate and --concurrency need --duration SECONDS")
    if args.progress < 0:
        parser.error("--progress is 0 (none) or a number of seconds")
    if args.stages is None and (args.rate if args.rate is not None else args.concurrency) <= 0:
        parser.error("--concurrency and --rate must be positive")
    try:
        if args.stages is not None:
            shape: Shape = args.stages
        elif args.rate is not None:
            shape = Shape.constant("open", args.rate, args.duration)
        else:
            shape = Shape.constant("closed", args.concurrency, args.duration)
        shape = with_warmup(shape, args.warmup)
    except ShapeError as e:
        parser.error(str(e))
    if not 0 < shape.total_s <= max_s:
        parser.error(
            f"a load runs within (0, {max_s:g}] seconds, its warm-up included; "
            f"this one {shape.total_s:g}"
        )
    return shape


async def run(args: argparse.Namespace, settings: GreenSettings) -> int:
    """Run the load (:func:`~services.green_agent.commands.generator.load`); its exit status."""
    return await load(args, settings)


def check(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    """What the options say together: the shape (``args.shape``) and the generators."""
    args.shape = shape_of(args, parser, MAX_LOAD_SECONDS)
    if args.workers < 1:
        parser.error("--workers must be at least 1")
