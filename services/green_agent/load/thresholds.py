"""Budgets a load run must meet, as load testers gate a release with one: ``p99<2s``.

A budget is ``MEASURE OP LIMIT`` (spaces allowed), k6's thresholds in a shorter spelling:

- ``pN`` (0 < N <= 100: ``p50``, ``p90``, ``p99``, ``p99.9``), ``mean``, ``min``, ``max``: the
  answers' latency, read from the run's histogram as the report reads its percentiles (at most
  1% high); the limit is a time with its unit, ``us`` (or ``µs``), ``ms`` or ``s``.
- ``errors`` (or ``error_ratio``): the failed requests' share of those sent, ``1%`` or ``0.01``.
- ``rate``: the answered requests per second over the run, ``40`` or ``40/s``.

OP is ``<``, ``<=``, ``>`` or ``>=``. ``load --threshold`` takes one budget or several separated
by commas, and is repeated at will. A latency budget of a run without answers, or an error
budget of a run that sent nothing, is breached: there is nothing that meets it.

A budget judges the whole run: a split run's workers list theirs in their reports unjudged
(:func:`pending`; a share's rate is a fraction of the run's), and the merge judges the merged
report (:func:`~services.green_agent.load.recorder.merge_load_reports`). A run that breaches a budget
exits with :data:`EXIT_BREACHED`.
"""

from __future__ import annotations

import argparse
import operator
import re
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from pydantic import BaseModel, field_validator
from rich.table import Table

from services.green_agent.load.histogram import LatencyHistogram

#: The exit status of a run that breached a budget: 1 is an uncaught error's, 2 a bad setting's
#: or an unreachable agent's (``eval`` exits 1 when a query failed).
EXIT_BREACHED = 3

Kind = Literal["latency", "errors", "rate"]
_BUDGET = re.compile(r"\s*(?P<measure>[a-z][a-z0-9._]*)\s*(?P<op><=|>=|<|>)\s*(?P<limit>.*?)\s*")
_PERCENTILE = re.compile(r"p(?P<n>\d+(?:\.\d+)?)")
_NUMBER = r"(?P<number>\d+(?:\.\d+)?|\.\d+)"
_TIME = re.compile(rf"{_NUMBER}\s*(?P<unit>us|µs|ms|s)?")
_SHARE = re.compile(rf"{_NUMBER}\s*(?P<unit>%)?")
_RATE = re.compile(rf"{_NUMBER}\s*(?P<unit>/s)?")
_SECONDS = {"us": 1e-6, "µs": 1e-6, "ms": 1e-3, "s": 1.0}
MEASURES = "pN (p50, p90, p99, p99.9), mean, min, max, errors or rate"
_OPS: dict[str, Callable[[float, float], bool]] = {
    "<": operator.lt,
    "<=": operator.le,
    ">": operator.gt,
    ">=": operator.ge,
}
_VERDICTS = {True: "[green]pass[/]", False: "[bold red]BREACHED[/]", None: "on the merged run"}


class RunFigures(Protocol):
    """What a budget reads of a report (:class:`~services.green_agent.load.report.LoadReport`)."""

    @property
    def requests(self) -> int:
        """Requests sent."""

    @property
    def errors(self) -> int:
        """Requests that failed."""

    @property
    def throughput_rps(self) -> float:
        """Answered requests per second of the run."""

    @property
    def latencies(self) -> LatencyHistogram:
        """The answers' latencies."""


@dataclass(frozen=True, slots=True)
class Budget:
    """One parsed budget: ``measure op limit`` (``limit`` in seconds, a share, or per second)."""

    text: str
    measure: str
    op: str
    limit: float

    @property
    def kind(self) -> Kind:
        """What the measure is: a latency, the error share or the answered rate."""
        if self.measure == "errors":
            return "errors"
        return "rate" if self.measure == "rate" else "latency"

    def measured(self, run: RunFigures) -> float | None:
        """The run's figure this budget reads (None: the run has none: no answers, no requests)."""
        if self.kind == "rate":
            return run.throughput_rps
        if self.kind == "errors":
            return run.errors / run.requests if run.requests else None
        latencies = run.latencies
        if not latencies.count:
            return None
        if self.measure == "mean":
            return latencies.mean_s
        if self.measure == "min":
            return latencies.min_s
        if self.measure == "max":
            return latencies.max_s
        return latencies.quantile(float(self.measure[1:]) / 100)

    def holds(self, value: float | None) -> bool:
        """Whether ``value`` meets the budget (None never does)."""
        return value is not None and _OPS[self.op](value, self.limit)

    def show(self, value: float | None) -> str:
        """``value`` in the budget's terms: milliseconds, a percentage, or per second."""
        if value is None:
            return "no requests" if self.kind == "errors" else "no answers"
        if self.kind == "errors":
            return f"{value:.2%}"
        if self.kind == "rate":
            return f"{value:.1f}/s"
        return f"{value * 1000:.3g} ms" if value < 0.001 else f"{value * 1000:.1f} ms"


def parse_budget(text: str) -> Budget:
    """Parse one budget (``p99<2s``, ``errors<1%``, ``rate>=40``); a ValueError says why not."""
    match = _BUDGET.fullmatch(text.lower())
    if match is None or not match["limit"]:
        raise ValueError(f"{text.strip()!r} is not a budget: write MEASURE<LIMIT, e.g. p99<2s")
    measure, op, limit = match["measure"], match["op"], match["limit"]
    if measure == "error_ratio":
        measure = "errors"
    limit_text = re.sub(r"\s+", "", limit)
    canonical = f"{measure}{op}{limit_text}"
    if measure == "errors":
        value = _share(limit, canonical)
    elif measure == "rate":
        value = _number(_RATE, limit, canonical, "a rate per second, e.g. 40 or 40/s")
    elif measure in ("mean", "min", "max") or _PERCENTILE.fullmatch(measure):
        value = _latency(measure, limit, canonical)
    else:
        raise ValueError(f"{text.strip()!r}: unknown measure {measure!r}: use {MEASURES}")
    return Budget(canonical, measure, op, value)


def _number(pattern: re.Pattern[str], limit: str, budget: str, expected: str) -> float:
    match = pattern.fullmatch(limit)
    if match is None:
        raise ValueError(f"{budget!r}: the limit {limit!r} is not {expected}")
    return float(match["number"])


def _share(limit: str, budget: str) -> float:
    match = _SHARE.fullmatch(limit)
    if match is None:
        raise ValueError(f"{budget!r}: the limit {limit!r} is not a share, e.g. 1% or 0.01")
    value = float(match["number"]) / (100 if match["unit"] else 1)
    if value > 1:
        raise ValueError(f"{budget!r}: a share of the requests is at most 100% (1)")
    return value


def _latency(measure: str, limit: str, budget: str) -> float:
    percentile = _PERCENTILE.fullmatch(measure)
    if percentile is not None and not 0 < float(percentile["n"]) <= 100:
        raise ValueError(f"{budget!r}: a percentile is within (0, 100], not {percentile['n']}")
    match = _TIME.fullmatch(limit)
    if match is None:
        raise ValueError(f"{budget!r}: the limit {limit!r} is not a time, e.g. 2s")
    if match["unit"] is None:
        raise ValueError(f"{budget!r}: give the time's unit: us, ms or s")
    return float(match["number"]) * _SECONDS[match["unit"]]


def parse_budgets(texts: Iterable[str]) -> list[Budget]:
    """Every budget of ``texts``, each one budget or several separated by commas, once each."""
    budgets: dict[str, Budget] = {}
    for text in texts:
        for part in text.split(","):
            budget = parse_budget(part)
            budgets.setdefault(budget.text, budget)
    return list(budgets.values())


def budget_argument(text: str) -> list[Budget]:
    """``--threshold 'p99<2s,errors<1%'``: the budgets; a malformed one is refused with why."""
    try:
        return parse_budgets([text])
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


class Threshold(BaseModel):
    """One budget and the run's figure against it (``passed`` None: a worker's share, unjudged)."""

    budget: str
    measured: float | None = None
    passed: bool | None = None

    @field_validator("budget")
    @classmethod
    def _parses(cls, budget: str) -> str:
        """Refuse a budget that does not parse: the merge judges it, the page shows it."""
        parse_budget(budget)
        return budget

    def line(self) -> str:
        """The budget and what the run measured, in the budget's terms."""
        if self.passed is None:
            return f"{self.budget}: judged on the merged run"
        return f"{self.budget}: {parse_budget(self.budget).show(self.measured)}"


def judge(budgets: Sequence[Budget], run: RunFigures) -> list[Threshold]:
    """Each budget against the run's figures."""
    return [
        Threshold(budget=b.text, measured=(m := b.measured(run)), passed=b.holds(m))
        for b in budgets
    ]


def pending(budgets: Sequence[Budget]) -> list[Threshold]:
    """The budgets listed unjudged (a worker's share: the merge judges them)."""
    return [Threshold(budget=b.text) for b in budgets]


def breaches(thresholds: Sequence[Threshold]) -> list[Threshold]:
    """The budgets the run breached."""
    return [t for t in thresholds if t.passed is False]


def exit_status(thresholds: Sequence[Threshold]) -> int:
    """:data:`EXIT_BREACHED` if any budget was breached, else 0."""
    return EXIT_BREACHED if breaches(thresholds) else 0


def thresholds_table(thresholds: Sequence[Threshold]) -> Table:
    """Each budget, what the run measured, and whether it passed."""
    table = Table(title="budgets")
    for column in ("budget", "measured", "verdict"):
        table.add_column(column, justify="left" if column == "budget" else "right")
    for t in thresholds:
        shown = parse_budget(t.budget).show(t.measured) if t.passed is not None else "-"
        table.add_row(t.budget, shown, _VERDICTS[t.passed])
    return table
