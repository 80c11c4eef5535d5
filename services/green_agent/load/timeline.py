"""A load run over time and by latency: its timeline and the histograms of its answers.

The timeline puts every outcome in the bucket where it *ended* (``started_s + latency_s``): a
bucket's throughput is then the answers completed per second, and its percentiles those of the
answers completed in it, which is what Prometheus shows from the servers' histograms
(``rate()``, ``histogram_quantile()``) for the same window. Each bucket keeps its answers'
mergeable histogram (:mod:`services.green_agent.load.histogram`), so the timelines of several
generators merge bucket by bucket. The display histogram uses the bucket edges of the services'
Prometheus histograms (:data:`services.telemetry.metrics.LATENCY_BUCKETS`), so a share of
answers under an edge reads the same in the report and in Prometheus.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from services.green_agent.evaluation.report import LatencyStats
from services.green_agent.load.histogram import LatencyHistogram
from services.telemetry.metrics import LATENCY_BUCKETS

#: Bucket widths in seconds, smallest first; a run gets the smallest that keeps it readable.
#: Each divides the next: a generator widens its buckets as its run grows longer than it
#: planned (a run stopped by a signal has no planned end), and timelines of several widths
#: merge into the widest, each of its buckets whole buckets of the others.
NICE_WIDTHS_S = (1.0, 2.0, 10.0, 20.0, 60.0, 120.0, 600.0, 1200.0, 3600.0)
#: Most points a timeline has (one a second up to two minutes).
MAX_POINTS = 120


def histogram_stats(histogram: LatencyHistogram) -> LatencyStats:
    """Count, mean, the exact extremes, and percentiles (bucket upper edges, at most 1% high)."""
    return LatencyStats(
        count=histogram.count,
        mean_s=histogram.mean_s,
        min_s=histogram.min_s or 0.0,
        p50_s=histogram.quantile(0.50),
        p90_s=histogram.quantile(0.90),
        p95_s=histogram.quantile(0.95),
        p99_s=histogram.quantile(0.99),
        p999_s=histogram.quantile(0.999),
        max_s=histogram.max_s or 0.0,
    )


class TimelinePoint(BaseModel):
    """Outcomes that ended in one time bucket of the run (``latencies``: its answers')."""

    start_s: float
    span_s: float
    answered: int
    failed: int
    throughput_rps: float
    error_rps: float
    latency: LatencyStats
    latencies: LatencyHistogram
    # The mean number of requests in flight over the bucket (their time in it over its span);
    # 0 in a report written before it was recorded.
    in_flight: float = 0.0


def timeline_point(
    start_s: float, span_s: float, failed: int, latencies: LatencyHistogram, busy_s: float = 0.0
) -> TimelinePoint:
    """One bucket's point: its rates over ``span_s``, its answers' latency, its time in flight."""
    return TimelinePoint(
        start_s=start_s,
        span_s=span_s,
        answered=latencies.count,
        failed=failed,
        throughput_rps=latencies.count / span_s,
        error_rps=failed / span_s,
        latency=histogram_stats(latencies),
        latencies=latencies,
        in_flight=busy_s / span_s if span_s > 0 else 0.0,
    )


class LatencyBin(BaseModel):
    """Answers with ``lower_ms < latency <= upper_ms`` (``upper_ms`` None: no upper bound)."""

    lower_ms: float
    upper_ms: float | None
    count: int


def bucket_width(span_s: float) -> float:
    """Return the smallest nice width giving at most :data:`MAX_POINTS` buckets over ``span_s``."""
    width = NICE_WIDTHS_S[0]
    while span_s / width > MAX_POINTS:
        width = wider(width)
    return width


def wider(width: float) -> float:
    """The next width after ``width``: a whole multiple of it."""
    for nice in NICE_WIDTHS_S:
        if nice > width:
            return nice
    return width * 2


def is_width(width: float) -> bool:
    """Whether ``width`` is one a timeline takes (:func:`bucket_width`, :func:`wider`)."""
    nice = NICE_WIDTHS_S[-1]
    while nice < width:
        nice *= 2
    return width in NICE_WIDTHS_S or width == nice


def latency_bin(seconds: float) -> int:
    """The index of the display bin holding ``seconds``: an edge counts in the bin below it."""
    return bisect.bisect_left(LATENCY_BUCKETS, seconds)


#: Display bins: one below each edge of :data:`LATENCY_BUCKETS`, and one above the last.
LATENCY_BINS = len(LATENCY_BUCKETS) + 1


def latency_bins(counts: Sequence[int]) -> list[LatencyBin]:
    """The display bins with ``counts`` (one a bin, :data:`LATENCY_BINS` of them)."""
    # Rounded so an edge reads as its decimal milliseconds, not as 2.5000000000000004.
    edges_ms = [round(edge * 1000, 6) for edge in LATENCY_BUCKETS]
    lowers = [0.0, *edges_ms]
    uppers: list[float | None] = [*edges_ms, None]
    return [
        LatencyBin(lower_ms=low, upper_ms=high, count=n)
        for low, high, n in zip(lowers, uppers, counts, strict=True)
    ]


@dataclass(slots=True)
class _Window:
    """What ended in one bucket: the answers' latencies, the failures, and time in flight."""

    latencies: LatencyHistogram = field(default_factory=LatencyHistogram)
    failed: int = 0
    busy_s: float = 0.0

    def add(self, other: _Window) -> None:
        self.latencies = self.latencies.merged(other.latencies)
        self.failed += other.failed
        self.busy_s += other.busy_s


class Timeline:
    """A run's timeline as its requests end: a bucket per width, at most :data:`MAX_POINTS`.

    Times are seconds since the timeline's origin (the end of the warm-up). Buckets start one
    second wide and widen to the next of :data:`NICE_WIDTHS_S` whenever a request ends past the
    last (a run stopped by a signal reads as finely as one that lasted as long); timelines of
    two widths merge into the wider, each of its buckets whole buckets of the other.
    """

    def __init__(self) -> None:
        """An empty timeline of the narrowest width."""
        self.width = NICE_WIDTHS_S[0]
        self._windows: dict[int, _Window] = {}
        self.last_end_s = 0.0

    @classmethod
    def of_points(cls, width: float, points: Sequence[TimelinePoint]) -> Timeline:
        """The timeline a report's points (``width`` wide) were written from."""
        timeline = cls()
        timeline.width = width
        for point in points:
            window = _Window(point.latencies.model_copy(deep=True), point.failed)
            window.busy_s = point.in_flight * point.span_s
            timeline._windows[round(point.start_s / width)] = window
        if points:
            timeline.last_end_s = points[-1].start_s + points[-1].span_s
        return timeline

    def record(self, begin_s: float, end_s: float, latency_s: float | None) -> None:
        """A request in flight from ``begin_s`` to ``end_s``: answered in ``latency_s``, or None."""
        low, high = max(begin_s, 0.0), max(end_s, 0.0)
        self.last_end_s = max(self.last_end_s, high)
        while high // self.width > MAX_POINTS:  # the run outgrew its buckets
            self._widen()
        width = self.width
        ended = self._window(int(high // width))
        if latency_s is not None:
            ended.latencies.record(latency_s)
        else:
            ended.failed += 1
        # Its time in flight, spread over the buckets it spans (one or two, mostly).
        index = int(low // width)
        while low < high:
            edge = min(high, (index + 1) * width)
            self._window(index).busy_s += edge - low
            low, index = edge, index + 1

    def merge(self, other: Timeline) -> None:
        """Add ``other``'s buckets to these, in the wider of the two widths."""
        while self.width < other.width:
            self._widen()
        ratio = round(self.width / other.width)
        for index, window in other._windows.items():
            self._window(index // ratio).add(window)
        self.last_end_s = max(self.last_end_s, other.last_end_s)

    def points(self, wall_s: float) -> list[TimelinePoint]:
        """One point a bucket up to the span recorded (at least ``wall_s``); none when empty.

        The last point takes the tail shorter than a width (the drain after the duration): a
        bucket of a few milliseconds would turn one late answer into a throughput spike.
        """
        if not self._windows:
            return []
        width = self.width
        span = max(wall_s, self.last_end_s)
        count = max(1, min(math.floor(span / width), MAX_POINTS))
        windows = [_Window() for _ in range(count)]
        for index, window in self._windows.items():
            windows[min(index, count - 1)].add(window)
        return [
            timeline_point(
                i * width,
                span - i * width if i == count - 1 else width,
                window.failed,
                window.latencies,
                window.busy_s,
            )
            for i, window in enumerate(windows)
        ]

    def _window(self, index: int) -> _Window:
        window = self._windows.get(index)
        if window is None:
            window = self._windows[index] = _Window()
        return window

    def _widen(self) -> None:
        """Widen the buckets to the next width, each new one the sum of the old it covers."""
        new = wider(self.width)
        ratio = round(new / self.width)  # a whole number: each width divides the next
        windows: dict[int, _Window] = {}
        for i, window in self._windows.items():
            windows.setdefault(i // ratio, _Window()).add(window)
        self.width, self._windows = new, windows
