"""The progress line of a load run: every few seconds, how the run goes right now.

One line per interval (``load --progress SECONDS``, on stderr): the time since the start, the
stage running and the pace it asks now, the requests completed per second over the interval,
the p50 and p99 of the answers completed in it, the failures so far and the requests in flight.
The warm-up's requests are shown too (the line names the warm-up): the line says what happens,
the report keeps the figures.

Its cost on the hot path is one :meth:`Meter.note` per request: a histogram record (or a count of
a failure); the interval's histogram is swapped for an empty one when the line is written.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.load.histogram import LatencyHistogram
from services.green_agent.load.shape import Phase, Shape

#: How every progress line begins: a run split across processes shows its workers' lines by it.
PREFIX = "progress "


class Meter:
    """The answers' latencies of the current interval, and the failures so far."""

    __slots__ = ("failed", "window")

    def __init__(self) -> None:
        """Start with an empty interval and no failure."""
        self.window = LatencyHistogram()
        self.failed = 0

    def note(self, outcome: QueryOutcome) -> None:
        """Count one outcome: its latency if answered, else one failure more."""
        if outcome.ok:
            self.window.record(outcome.latency_s)
        else:
            self.failed += 1

    def take(self) -> LatencyHistogram:
        """The interval's histogram, and a new interval begins."""
        window, self.window = self.window, LatencyHistogram()
        return window


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:.1f} ms"


def _pace(value: float, shape: Shape) -> str:
    return f"{value:.4g}/s" if shape.loop == "open" else f"{value:.4g} in flight"


def _where(phase: Phase | None, shape: Shape, elapsed_s: float) -> str:
    if phase is None:
        return "draining"
    if phase.warmup:
        return f"warm-up at {_pace(phase.end, shape)}"
    name = f"stage {phase.index + 1}/{len(shape.stages)}"
    if phase.ramp:
        now = _pace(phase.pace(elapsed_s), shape)
        return f"{name} ramp to {_pace(phase.end, shape)} (now {now})"
    return f"{name} at {_pace(phase.end, shape)}"


def progress_line(
    shape: Shape,
    elapsed_s: float,
    interval_s: float,
    window: LatencyHistogram,
    failed_in_interval: int,
    failed: int,
    in_flight: int,
) -> str:
    """One progress line: where the run is, and its interval's rate and percentiles."""
    done = window.count + failed_in_interval
    rate = done / interval_s if interval_s > 0 else 0.0
    latency = (
        f"p50 {_ms(window.quantile(0.5))}, p99 {_ms(window.quantile(0.99))}"
        if window.count
        else "no answers"
    )
    where = _where(shape.phase_at(elapsed_s), shape, elapsed_s)
    return (
        f"{PREFIX}{elapsed_s:6.1f}s  {where}: {rate:.1f}/s done, {latency}, "
        f"{failed} errors, {in_flight} in flight"
    )


async def show_progress(
    meter: Meter,
    shape: Shape,
    origin: float,
    every_s: float,
    in_flight: Callable[[], int],
    emit: Callable[[str], None],
) -> None:
    """Emit a progress line every ``every_s`` seconds until cancelled."""
    last, failed_before = origin, meter.failed
    while True:
        await asyncio.sleep(every_s)
        now = time.perf_counter()
        window, failed = meter.take(), meter.failed
        emit(
            progress_line(
                shape, now - origin, now - last, window, failed - failed_before, failed, in_flight()
            )
        )
        last, failed_before = now, failed
