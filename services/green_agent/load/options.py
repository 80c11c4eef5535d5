"""The ``load`` command's options of its pace over time: ``--stages``, ``--warmup``, ``--progress``.

``--rate R`` or ``--concurrency C`` for ``--duration SECONDS`` stays a shape of one step;
``--stages`` gives the shape in its text form (:mod:`services.green_agent.load.shape`). A shape
that does not read is argparse's error, exit status 2 with the message saying which part and why.
"""

from __future__ import annotations

import argparse
import sys

from services.green_agent.load.shape import (
    Shape,
    ShapeError,
    parse_stages,
    parse_warmup,
    with_warmup,
)

LOAD_HELP = """\
Load an agent at a constant pace (--rate R or --concurrency C, for --duration SECONDS) or along a
shape of stages (--stages), each DURATION seconds at a TARGET:

  STAGE[,STAGE...]   STAGE = [ramp:]DURATION:TARGET (a step holds TARGET from its start; a ramp
                     goes linearly from the previous stage's target, or the warm-up's, or 0)
  DURATION           seconds: 30, 30s, 1.5m, 1h
  TARGET             20/s: a rate (open loop, requests started per second); 8: a concurrency
                     (closed loop, requests in flight); all stages of one kind

  --stages 10s:20/s,ramp:20s:100/s,30s:100/s --warmup 10s

--warmup DURATION[:TARGET] first runs that long, at the first stage's target or TARGET: its
requests are counted as the warm-up's and left out of every other figure of the report. The
report shows each stage: its target, the rate asked and achieved (started per second, open loop;
completed per second and the mean in flight, closed loop). A progress line goes to stderr every
--progress seconds while the run goes on.
"""


def _stages_argument(text: str) -> Shape:
    """``--stages``: the shape, or argparse's error (exit 2) with what does not read."""
    try:
        kind, stages = parse_stages(text)
        return Shape(kind, stages)
    except ShapeError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


def _warmup_argument(text: str) -> str:
    """``--warmup``: the text, once it reads (its target is checked against the stages later)."""
    try:
        parse_warmup(text)
    except ShapeError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    return text


def add_pace_options(load: argparse.ArgumentParser) -> None:
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
            shape = Shape.constant("rate", args.rate, args.duration)
        else:
            shape = Shape.constant("concurrency", args.concurrency, args.duration)
        shape = with_warmup(shape, args.warmup)
    except ShapeError as e:
        parser.error(str(e))
    if not 0 < shape.total_s <= max_s:
        parser.error(
            f"a load runs within (0, {max_s:g}] seconds, its warm-up included; "
            f"this one {shape.total_s:g}"
        )
    return shape


def print_progress(line: str) -> None:
    """Write a progress line to stderr at once (a worker's parent reads it as it comes)."""
    print(line, file=sys.stderr, flush=True)


def worker_arguments(shape: Shape, progress_s: float) -> list[str]:
    """The options that give a worker process the whole run's shape (it takes its share)."""
    return [
        *("--stages", shape.text(), "--warmup", shape.warmup_text()),
        *("--progress", str(progress_s)),
    ]
