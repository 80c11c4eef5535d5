"""A latency histogram that merges exactly: fixed log buckets of a stated resolution.

Several load generators cannot combine their percentiles (a mean of p99s is no p99), but they
can add counts kept in the same buckets. Bucket ``i`` holds the latencies in
``[FLOOR_S * GROWTH**i, FLOOR_S * GROWTH**(i + 1))``, with ``GROWTH`` = 1 + :data:`RESOLUTION`:
every worker uses the same edges, so merging is adding counts bucket by bucket: the merged
counts, extremes and percentiles are those that recording every latency in one process gives.
A percentile is read as its bucket's upper edge (capped by the largest latency recorded): at
most :data:`RESOLUTION` above the exact sample percentile (the "nearest rank" one), never below.

Bucket indexes are bounded (:data:`MAX_BUCKET`, a day), and a histogram is checked as it is
read: its buckets are this module's, its counts of buckets within the bound, none negative, and
they add up to ``count``. A
worker's report brings its histograms over the network: an index of 100000 would otherwise
overflow the float of its edge when a percentile is read.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from pydantic import BaseModel, Field, model_validator

#: Relative width of a bucket: a percentile reads at most 1% high.
RESOLUTION = 0.01
GROWTH = 1.0 + RESOLUTION
#: Latencies at or below this share the first bucket.
FLOOR_S = 1e-5
_LOG_GROWTH = math.log(GROWTH)
#: The longest latency with a bucket of its own: a day. A load run lasts an hour at most and a
#: request times out long before (``GREEN_TIMEOUT_S``), so no real latency comes near it; the
#: bound keeps every edge a finite float (``GROWTH**index`` overflows a float in the tens of
#: thousands) and the buckets a report may state few.
MAX_LATENCY_S = 86_400.0


def _bucket(seconds: float) -> int:
    index = int(math.log(seconds / FLOOR_S) / _LOG_GROWTH)
    # The logarithm's rounding may put an edge value one bucket off: settle it by the edges.
    if FLOOR_S * GROWTH**index > seconds:
        index -= 1
    elif FLOOR_S * GROWTH ** (index + 1) <= seconds:
        index += 1
    return index


#: The last bucket: the one of :data:`MAX_LATENCY_S`, which also holds anything longer.
MAX_BUCKET = _bucket(MAX_LATENCY_S)


def bucket_of(seconds: float) -> int:
    """The index of the bucket holding ``seconds`` (0 at or below the floor, at most MAX_BUCKET)."""
    if seconds <= FLOOR_S:
        return 0
    # Longer than a day (a clock jump): counted in the last bucket, its percentile then read as
    # that bucket's edge, the largest latency a report can state.
    return MAX_BUCKET if seconds >= MAX_LATENCY_S else _bucket(seconds)


def upper_edge(index: int) -> float:
    """The exclusive upper edge of bucket ``index``, in seconds."""
    return FLOOR_S * GROWTH ** (index + 1)


class LatencyHistogram(BaseModel):
    """Counts of latencies by log bucket (sparse), with their number, sum and extremes."""

    resolution: float = RESOLUTION
    floor_s: float = FLOOR_S
    #: Bucket index -> count, only the buckets with any.
    counts: dict[int, int] = Field(default_factory=dict)
    count: int = 0
    sum_s: float = 0.0
    min_s: float | None = None
    max_s: float | None = None

    @model_validator(mode="after")
    def _consistent(self) -> LatencyHistogram:
        """Refuse other buckets than ours, negative counts, and a ``count`` they miss."""
        if (self.resolution, self.floor_s) != (RESOLUTION, FLOOR_S):
            # The edges are this module's whatever a histogram states: others' counts misread.
            raise ValueError(
                f"buckets of resolution {self.resolution} from {self.floor_s} s: "
                f"a report's are of {RESOLUTION} from {FLOOR_S} s"
            )
        outside = sorted(i for i in self.counts if not 0 <= i <= MAX_BUCKET)
        if outside:
            raise ValueError(
                f"bucket index {outside[0]} is outside 0..{MAX_BUCKET} "
                f"(latencies up to {MAX_LATENCY_S:g} s)"
            )
        negative = sorted(i for i, n in self.counts.items() if n < 0)
        if negative:
            raise ValueError(f"bucket {negative[0]} has a negative count")
        if sum(self.counts.values()) != self.count:
            raise ValueError(
                f"the bucket counts add up to {sum(self.counts.values())}, not count {self.count}"
            )
        if self.count and (self.min_s is None or self.max_s is None):
            raise ValueError("a histogram with latencies has their min_s and max_s")
        return self

    @classmethod
    def of(cls, latencies_s: Iterable[float]) -> LatencyHistogram:
        """A histogram of ``latencies_s``."""
        histogram = cls()
        for seconds in latencies_s:
            histogram.record(seconds)
        return histogram

    def record(self, seconds: float) -> None:
        """Count one latency."""
        index = bucket_of(seconds)
        self.counts[index] = self.counts.get(index, 0) + 1
        self.count += 1
        self.sum_s += seconds
        self.min_s = seconds if self.min_s is None else min(self.min_s, seconds)
        self.max_s = seconds if self.max_s is None else max(self.max_s, seconds)

    def merged(self, other: LatencyHistogram) -> LatencyHistogram:
        """The union of both histograms; :class:`ValueError` if their buckets differ."""
        if (self.resolution, self.floor_s) != (other.resolution, other.floor_s):
            raise ValueError(
                f"histograms of other buckets cannot merge: resolution {self.resolution} from "
                f"{self.floor_s} s against {other.resolution} from {other.floor_s} s"
            )
        counts = dict(self.counts)
        for index, n in other.counts.items():
            counts[index] = counts.get(index, 0) + n
        extremes = [x for x in (self.min_s, other.min_s) if x is not None]
        highs = [x for x in (self.max_s, other.max_s) if x is not None]
        return LatencyHistogram(
            resolution=self.resolution,
            floor_s=self.floor_s,
            counts=dict(sorted(counts.items())),
            count=self.count + other.count,
            sum_s=math.fsum((self.sum_s, other.sum_s)),
            min_s=min(extremes, default=None),
            max_s=max(highs, default=None),
        )

    def quantile(self, q: float) -> float:
        """The ``q``-quantile (0..1) in seconds, as its bucket's upper edge; 0 when empty.

        The nearest-rank sample quantile is the ``ceil(q * count)``-th smallest latency; the
        answer is the upper edge of its bucket, or the largest latency if that is lower.
        """
        if not 0 <= q <= 1:
            raise ValueError(f"a quantile is within [0, 1], not {q}")
        if not self.count:
            return 0.0
        rank = max(1, math.ceil(q * self.count))
        seen = 0
        for index in sorted(self.counts):
            seen += self.counts[index]
            if seen >= rank:
                assert self.max_s is not None
                return min(upper_edge(index), self.max_s)
        raise AssertionError("counts add up to fewer than count")  # pragma: no cover

    @property
    def mean_s(self) -> float:
        """The mean latency (0 when empty)."""
        return self.sum_s / self.count if self.count else 0.0


def merge_all(histograms: Iterable[LatencyHistogram]) -> LatencyHistogram:
    """Every histogram as one (an empty one for none)."""
    merged = LatencyHistogram()
    for histogram in histograms:
        merged = merged.merged(histogram)
    return merged
