"""A Locust run of ours as a whole: its pace (``--stages``), its answers, its budgets' verdict.

:mod:`.locustfile` holds the users; this module what Locust needs of ours around them, in the
Locust process (master, worker or lone) that has it:

- ``--stages`` and ``--warmup``, the closed loop of ``load``'s shapes
  (:mod:`services.green_agent.load.shape`), as a ``LoadTestShape`` (:class:`StagesShape`) on the
  process that drives the run; without them the shape is dropped and Locust's own ``-u``, ``-r``
  and ``-t`` drive it. A rate (``20/s``, an open loop) is refused: Locust's users are requests in
  flight.
- The answers' latencies: a histogram of those of the queries that met the contract
  (:mod:`services.green_agent.load.histogram`, the report's), kept apart from Locust's response
  times, which are rounded and mix the failures in. A worker sends what it recorded with each of
  its reports, as Locust's own figures go, and the master adds the buckets up; both are reset
  where Locust resets its figures (the web UI's reset, ``--reset-stats``, the warm-up's end).
- ``--threshold``: the budgets (:mod:`services.green_agent.load.thresholds`), judged when Locust
  quits on the master's or the lone process's figures of the ``query`` row, never on a
  worker's share; a breach sets the exit status to
  :data:`~services.green_agent.load.thresholds.EXIT_BREACHED` and is named on stderr.
"""

from __future__ import annotations

import argparse
import logging
import sys
import time
from dataclasses import dataclass, field
from typing import Any, NoReturn

from locust import LoadTestShape, events
from locust import log as locust_log
from locust.argument_parser import LocustArgumentParser
from locust.env import Environment
from locust.runners import WorkerRunner
from locust.stats import RequestStats
from rich.console import Console

from services.green_agent.load.histogram import LatencyHistogram
from services.green_agent.load.shape import (
    Shape,
    ShapeError,
    parse_shape,
    parse_stages,
    parse_warmup,
)
from services.green_agent.load.thresholds import (
    EXIT_BREACHED,
    breaches,
    judge,
    parse_budgets,
    thresholds_table,
)

logger = logging.getLogger(__name__)
#: The name of the query requests in Locust's tables, the only requests the budgets judge.
QUERY = "query"
#: The key of a worker's report to the master that carries its answers' latencies.
ANSWERS_KEY = "nfcorpus_answers"


@dataclass
class _Run:
    """The shape this process drives (None: Locust's options do), and the answers it holds."""

    shape: Shape | None = None
    answers: LatencyHistogram = field(default_factory=LatencyHistogram)


_run = _Run()


def record_answer(seconds: float) -> None:
    """Count the latency of an answer that met the contract."""
    _run.answers.record(seconds)


def reset_answers(**_: Any) -> None:
    """Forget the answers so far, where Locust forgets its figures."""
    _run.answers = LatencyHistogram()


def refuse(message: str) -> NoReturn:
    """Stop Locust before the run, as a bad command line stops it (exit status 2)."""
    logger.error(message)
    raise SystemExit(2)


def _stages(text: str) -> str:
    """``--stages``: the text once it reads as a closed loop; argparse's error (exit 2) if not."""
    try:
        loop, _ = parse_stages(text)
    except ShapeError as e:
        raise argparse.ArgumentTypeError(str(e)) from None
    if loop == "open":
        raise argparse.ArgumentTypeError(
            f"{text!r} is a rate (open loop), and Locust's users are requests in flight: give "
            "concurrencies (e.g. 10s:4,ramp:20s:8), or run an open loop with "
            "`python -m services.green_agent load --stages`"
        )
    return text


def _budgets(text: str) -> str:
    """``--threshold``: the budgets once they parse; argparse's error (exit 2) with why if not."""
    try:
        return ",".join(budget.text for budget in parse_budgets([text]))
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


class _Joined(argparse.Action):
    """A repeated option's values joined by commas, as one value with commas reads."""

    def __call__(self, parser: Any, namespace: Any, values: Any, option: Any = None) -> None:
        before = getattr(namespace, self.dest, "")
        setattr(namespace, self.dest, ",".join(v for v in (before, values) if v))


@events.init_command_line_parser.add_listener  # type: ignore[untyped-decorator]  # untyped
def _arguments(parser: LocustArgumentParser) -> None:
    # The command line's only: a value typed in the web UI would skip these checks.
    parser.add_argument(
        "--stages",
        type=_stages,
        default=None,  # not "": argparse would read a string default through _stages
        help="a closed-loop shape, [ramp:]DURATION:USERS,... (10s:4,ramp:20s:8,30s:8), in "
        "place of -u, -r and -t",
        include_in_web_ui=False,
    )
    parser.add_argument(
        "--warmup",
        default="0",
        metavar="DURATION[:USERS]",
        help="with --stages, first run this long: left out of Locust's figures and the budgets",
        include_in_web_ui=False,
    )
    parser.add_argument(
        "--threshold",
        type=_budgets,
        action=_Joined,
        default=None,
        help="budgets judged when Locust quits (p99<2s,errors<1%%,rate>=40); a breach exits 3",
        include_in_web_ui=False,
    )


def _shape_of(options: argparse.Namespace) -> Shape | None:
    """The shape of ``--stages`` and ``--warmup``; None without stages (Locust's own options)."""
    if options.stages:
        return parse_shape(options.stages, options.warmup)
    if parse_warmup(options.warmup)[0] > 0:
        raise ShapeError("--warmup needs --stages (e.g. --stages 60s:8 --warmup 10s)")
    return None


@events.init.add_listener  # type: ignore[untyped-decorator]  # untyped
def _prepare(environment: Environment, **_: Any) -> None:
    """The shape where the run is driven (a worker takes its users from the master's)."""
    options = environment.parsed_options
    assert options is not None  # Locust's command line made them
    if environment.reset_stats:  # --reset-stats: Locust resets its figures once users spawn
        environment.events.spawning_complete.add_listener(reset_answers)  # type: ignore[no-untyped-call]
    if isinstance(environment.runner, WorkerRunner):
        return
    try:
        _run.shape = _shape_of(options)
    except ShapeError as e:
        refuse(f"--stages, --warmup: {e}")
    if _run.shape is None:
        environment.shape_class = None  # Locust's -u, -r and -t drive the run
    elif options.num_users or options.spawn_rate or options.run_time:
        logger.warning("--stages gives the users and the run's length: -u, -r, -t are ignored")


@events.test_start.add_listener  # type: ignore[untyped-decorator]  # untyped
def _begin(**_: Any) -> None:
    """A run starts: no answers yet, as Locust clears its figures."""
    reset_answers()


@events.reset_stats.add_listener  # type: ignore[untyped-decorator]  # untyped
def _reset(**_: Any) -> None:
    """The web UI's reset: the answers go with Locust's figures."""
    reset_answers()


@events.report_to_master.add_listener  # type: ignore[untyped-decorator]  # untyped
def _send_answers(data: dict[str, Any], **_: Any) -> None:
    """A worker's answers since its last report go with it, as Locust's own figures do."""
    data[ANSWERS_KEY] = _run.answers.model_dump()
    reset_answers()


@events.worker_report.add_listener  # type: ignore[untyped-decorator]  # untyped
def _add_answers(data: dict[str, Any], **_: Any) -> None:
    """The master adds a worker's answers to the run's: the buckets add, so the merge is exact."""
    if ANSWERS_KEY in data:
        sent = LatencyHistogram.model_validate(data[ANSWERS_KEY])
        _run.answers = _run.answers.merged(sent)


class StagesShape(LoadTestShape):
    """Locust's users along ``--stages``, after ``--warmup``: the shape's workers at each tick.

    Locust asks a shape once a second, so its users change on those ticks (a ramp's number
    rounded to the nearest whole user, as ``load`` rounds it), each change spawned or stopped
    within the tick. The warm-up ends at the first tick past it, where Locust moves to the first
    stage: Locust's figures and the answers' latencies are reset there, so that they and the
    budgets hold the stages alone.
    """

    # Locust warns that -u, -r and -t do nothing beside a shape unless this is set: they drive a
    # run without --stages, whose shape the init hook drops.
    use_common_options = True

    def __init__(self) -> None:
        """A shape not yet started."""
        super().__init__()  # type: ignore[no-untyped-call]  # Locust's is untyped
        self._warming = False

    def reset_time(self) -> None:
        """A run starts: its warm-up, if any, first."""
        super().reset_time()  # type: ignore[no-untyped-call]  # Locust's is untyped
        self._warming = _run.shape is not None and _run.shape.warmup is not None

    def tick(self) -> tuple[int, float] | None:
        """The users now, and a spawn rate that gets there within the tick; None once over."""
        shape, t = _run.shape, time.perf_counter() - self.start_time
        if shape is None or self.runner is None or t >= shape.total_s:
            return None
        if self._warming and t >= shape.warmup_s:
            self._warming = False
            self.runner.stats.reset_all()
            reset_answers()
        users = shape.workers_at(t)
        return users, float(max(users, self.runner.user_count, 1))


@dataclass(frozen=True)
class LocustFigures:
    """What a budget reads: Locust's counts of the ``query`` row, the answers' own latencies."""

    requests: int
    errors: int
    throughput_rps: float
    latencies: LatencyHistogram

    @classmethod
    def of(cls, stats: RequestStats, answers: LatencyHistogram) -> LocustFigures:
        """The ``query`` row's figures, its answers per second over Locust's span of the run.

        The span is Locust's own, from its start (or last reset) to the last request, as its
        ``Requests/s`` column divides by it.
        """
        entry = stats.get(QUERY, "POST")
        last, first = stats.last_request_timestamp, stats.start_time
        span = last - first if last is not None and first else 0.0
        answered = entry.num_requests - entry.num_failures
        rate = answered / span if span > 0 else 0.0
        return cls(entry.num_requests, entry.num_failures, rate, answers)


@events.quitting.add_listener  # type: ignore[untyped-decorator]  # untyped
def _judge(environment: Environment, **_: Any) -> None:
    """The budgets on the whole run, where it is whole: the master's, or the lone process's.

    Budgets given are the verdict, as ``load``'s are: 0 when met, failures or not (an
    ``errors`` budget bounds them), :data:`EXIT_BREACHED` when one is breached. Without budgets
    Locust's own exit status stands; a crash's stands either way.
    """
    runner, options = environment.runner, environment.parsed_options
    if runner is None or isinstance(runner, WorkerRunner) or not (options and options.threshold):
        return
    figures = LocustFigures.of(runner.stats, _run.answers)
    thresholds = judge(parse_budgets([options.threshold]), figures)
    Console(stderr=True).print(thresholds_table(thresholds))
    breached = breaches(thresholds)
    for threshold in breached:
        print(f"budget breached: {threshold.line()}", file=sys.stderr)
    if environment.process_exit_code is not None:
        return  # another listener's verdict
    if breached:
        environment.process_exit_code = EXIT_BREACHED
    elif not locust_log.unhandled_greenlet_exception:
        environment.process_exit_code = 0
