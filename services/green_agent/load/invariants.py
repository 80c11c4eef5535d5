"""What a load report's figures must hold together, checked whenever a report is read.

A report comes over the network (a worker's ``POST /reports`` to the load collector) or from a
file (``load-merge``, a report a restarted collector takes back), and the schema alone lets
through figures that do not add up. The merge adds them, and the HTML page and the CSV files
divide by them: ``"requests": 0`` with failures by reason passes the schema, yet the page's
share of requests divides by zero. A collector that stored such a report would fail on every
page after it, and again at each start. So a report is refused as it is read, with what does not
hold (:class:`~services.green_agent.load.report.LoadReport` checks it):

- every figure is a finite number, and none is negative but the result cache's (its figures
  are differences of the MCP server's counters, which a restart of the server sets back). JSON's
  ``Infinity`` reads as a float, and is written back as ``null``: a report that no longer reads;
- the requests sent are the answered and the failed ones; the failures by reason add up to the
  failures, each reason at least one; the latency histograms count the answers and the failures;
- the timeline's buckets have a width, count what their histograms count, and together count
  every request; the display histogram has the bins of the services' Prometheus buckets
  (:func:`~services.green_agent.load.timeline.latency_histogram`) and counts the answers;
- a closed loop states its concurrency, an open loop its target rate; the stages (one at least)
  and the warm-up make a shape (:class:`~services.green_agent.load.shape.Shape`) of that loop,
  and the timeline's width is one a generator takes, so reports merge.

Budgets check themselves (:class:`~services.green_agent.load.thresholds.Threshold`), histograms
too (:class:`~services.green_agent.load.histogram.LatencyHistogram`).
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Iterator, Sequence
from typing import Protocol

from pydantic import BaseModel

from services.green_agent.load.histogram import LatencyHistogram
from services.green_agent.load.shape import Loop, Shape, ShapeError, Stage
from services.green_agent.load.stages import StageFigures, WarmupFigures
from services.green_agent.load.timeline import (
    LATENCY_BINS,
    LatencyBin,
    TimelinePoint,
    is_width,
    latency_bins,
)

#: The figures that may be negative: differences of a server's counters (a restart resets them).
SIGNED = ("result_cache.",)
#: The loops of a run and the figure each states: ``concurrency`` or ``target_rate``.
LOOPS: dict[str, str] = {"closed": "concurrency", "open": "target_rate"}


class ReportFigures(Protocol):
    """What the checks read of a :class:`~services.green_agent.load.report.LoadReport`."""

    loop: Loop
    concurrency: int | None
    target_rate: float | None
    requests: int
    ok: int
    errors: int
    errors_by_reason: dict[str, int]
    timeline_bucket_s: float
    timeline: list[TimelinePoint]
    latency_histogram: list[LatencyBin]
    stages: list[StageFigures]
    warmup: WarmupFigures | None
    latencies: LatencyHistogram
    error_latencies: LatencyHistogram


def _numbers(value: object, path: str = "") -> Iterator[tuple[str, float]]:
    """Every number in ``value`` (models, lists and dicts walked), with its path."""
    if isinstance(value, BaseModel):
        items: Iterable[tuple[object, object]] = (
            (name, getattr(value, name)) for name in type(value).model_fields
        )
    elif isinstance(value, dict):
        items = value.items()
    elif isinstance(value, list):
        items = enumerate(value)
    else:
        if isinstance(value, int | float) and not isinstance(value, bool):
            yield path, value
        return
    for key, item in items:
        yield from _numbers(item, f"{path}.{key}" if path else str(key))


def _numbers_problems(report: object) -> list[str]:
    problems = []
    for path, number in _numbers(report):
        if not math.isfinite(number):
            problems.append(f"{path} is {number}: a figure is a finite number")
        elif number < 0 and not path.startswith(SIGNED):
            problems.append(f"{path} is {number}: a figure is not negative")
    return problems


def _timeline_problems(report: ReportFigures) -> list[str]:
    problems = []
    if not report.timeline_bucket_s > 0:
        problems.append(f"timeline_bucket_s is {report.timeline_bucket_s}: a bucket has a width")
    elif not is_width(report.timeline_bucket_s):
        problems.append(
            f"timeline_bucket_s is {report.timeline_bucket_s}: not a width a generator takes "
            "(1, 2, 10, 20, 60... s), so the timeline does not merge"
        )
    for index, point in enumerate(report.timeline):
        if not point.span_s > 0:
            problems.append(f"timeline.{index}.span_s is {point.span_s}: a bucket has a width")
        if point.answered != point.latencies.count:
            problems.append(
                f"timeline.{index}: answered {point.answered}, its latencies count "
                f"{point.latencies.count}"
            )
    answered = sum(p.answered for p in report.timeline)
    failed = sum(p.failed for p in report.timeline)
    if (answered, failed) != (report.ok, report.errors):
        problems.append(
            f"the timeline counts {answered} answered and {failed} failed, not ok "
            f"{report.ok} and errors {report.errors}"
        )
    return problems


def _histogram_problems(report: ReportFigures) -> list[str]:
    problems = []
    edges = [(b.lower_ms, b.upper_ms) for b in latency_bins([0] * LATENCY_BINS)]
    if [(b.lower_ms, b.upper_ms) for b in report.latency_histogram] != edges:
        problems.append(
            "latency_histogram: its bins are not the services' Prometheus buckets "
            f"({len(edges)} bins, from {edges[0][0]:g} ms up)"
        )
    if (shown := sum(b.count for b in report.latency_histogram)) != report.ok:
        problems.append(f"latency_histogram counts {shown} answers, not ok {report.ok}")
    for name, histogram, count in (
        ("latencies", report.latencies, report.ok),
        ("error_latencies", report.error_latencies, report.errors),
    ):
        if histogram.count != count:
            which = "ok" if name == "latencies" else "errors"
            problems.append(f"{name} counts {histogram.count}, not {which} {count}")
    return problems


def figures_problems(report: ReportFigures) -> list[str]:
    """What does not hold in ``report``'s figures, each naming its field (empty: they all do)."""
    problems = _numbers_problems(report)
    if report.ok + report.errors != report.requests:
        problems.append(
            f"ok {report.ok} and errors {report.errors} add up to {report.ok + report.errors}, "
            f"not requests {report.requests}"
        )
    by_reason = sum(report.errors_by_reason.values())
    if by_reason != report.errors:
        problems.append(f"errors_by_reason adds up to {by_reason}, not errors {report.errors}")
    problems += [
        f"errors_by_reason.{reason} is {count}: a reason counts one failure or more"
        for reason, count in report.errors_by_reason.items()
        if count < 1
    ]
    stated = LOOPS[report.loop]
    if [name for name in LOOPS.values() if getattr(report, name) is not None] != [stated]:
        paces = f"concurrency {report.concurrency}, target_rate {report.target_rate}"
        article = "an" if report.loop == "open" else "a"
        problems.append(
            f"{article} {report.loop} loop states {stated} and no other pace, not {paces}"
        )
    return (
        problems
        + _timeline_problems(report)
        + _histogram_problems(report)
        + _shape_problems(report)
    )


def _shape_problems(report: ReportFigures) -> list[str]:
    """Whether the stages and the warm-up make a shape of the report's pace."""
    if not report.stages:
        return ["stages: a run has one stage at least"]
    stages = tuple(Stage(s.duration_s, s.target, s.kind == "ramp") for s in report.stages)
    warmup = report.warmup
    try:
        Shape(report.loop, stages, Stage(warmup.duration_s, warmup.target) if warmup else None)
    except ShapeError as e:
        return [f"stages: {e}"]
    return []


def check_figures(report: ReportFigures) -> None:
    """Raise a ValueError naming every figure of ``report`` that does not hold."""
    problems = figures_problems(report)
    if problems:
        raise ValueError(_listed(problems))


def _listed(problems: Sequence[str], limit: int = 5) -> str:
    more = f" (and {len(problems) - limit} more)" if len(problems) > limit else ""
    return "; ".join(problems[:limit]) + more
