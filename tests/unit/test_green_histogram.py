"""The mergeable latency histogram: exact merges, percentiles within its resolution."""

from __future__ import annotations

import json
import math
import random

import pytest
from pydantic import ValidationError

from services.green_agent.load.histogram import (
    FLOOR_S,
    GROWTH,
    MAX_BUCKET,
    MAX_LATENCY_S,
    RESOLUTION,
    LatencyHistogram,
    bucket_of,
    merge_all,
    upper_edge,
)


def _latencies(n: int, seed: int) -> list[float]:
    rng = random.Random(seed)
    return [rng.lognormvariate(math.log(0.02), 1.0) for _ in range(n)]


def test_a_bucket_holds_its_lower_edge_and_not_its_upper_one() -> None:
    for index in (0, 1, 57, 1000):
        lower = FLOOR_S * GROWTH**index
        assert bucket_of(lower) == index
        assert bucket_of(upper_edge(index)) == index + 1
        assert bucket_of(math.nextafter(upper_edge(index), 0)) == index
    assert bucket_of(0.0) == bucket_of(FLOOR_S / 2) == 0


def test_merging_equals_recording_everything_in_one() -> None:
    parts = [_latencies(n, seed) for n, seed in ((500, 1), (37, 2), (0, 3), (1200, 4))]
    whole = LatencyHistogram.of(x for part in parts for x in part)
    merged = merge_all(LatencyHistogram.of(part) for part in parts)
    assert merged.counts == whole.counts and merged.count == whole.count == 1737
    assert (merged.min_s, merged.max_s) == (whole.min_s, whole.max_s)
    assert merged.sum_s == pytest.approx(whole.sum_s, rel=1e-12)
    for q in (0.0, 0.5, 0.9, 0.95, 0.99, 0.999, 1.0):
        assert merged.quantile(q) == whole.quantile(q)
    # Through JSON, as the workers' reports travel.
    assert LatencyHistogram.model_validate_json(merged.model_dump_json()) == merged


def test_a_percentile_reads_at_most_the_resolution_high_and_never_low() -> None:
    values = _latencies(2000, 5)
    ordered = sorted(values)
    histogram = LatencyHistogram.of(values)
    for q in (0.01, 0.5, 0.95, 0.99, 1.0):
        exact = ordered[max(1, math.ceil(q * len(values))) - 1]  # nearest rank
        assert exact <= histogram.quantile(q) <= exact * (1 + RESOLUTION)
    assert histogram.quantile(1.0) == max(values)
    assert LatencyHistogram().quantile(0.99) == 0.0


def test_histograms_of_other_buckets_are_not_read() -> None:
    # A report's histograms are all of one bucketing: another is refused when read, so two of
    # them never meet in a merge.
    with pytest.raises(ValueError, match=r"buckets of resolution 0\.05"):
        LatencyHistogram(resolution=0.05).merged(LatencyHistogram())
    with pytest.raises(ValueError, match="within"):
        LatencyHistogram().quantile(1.5)


def test_buckets_end_at_a_day_and_every_edge_is_a_finite_float() -> None:
    assert bucket_of(MAX_LATENCY_S) == MAX_BUCKET
    assert upper_edge(MAX_BUCKET - 1) <= MAX_LATENCY_S < upper_edge(MAX_BUCKET)
    # Anything longer (a clock jump) is counted in the last bucket, not past it.
    assert bucket_of(MAX_LATENCY_S * 1e6) == bucket_of(1e300) == MAX_BUCKET
    histogram = LatencyHistogram.of([0.01, 1e12])
    assert histogram.counts == {bucket_of(0.01): 1, MAX_BUCKET: 1}
    last = upper_edge(MAX_BUCKET)
    assert histogram.quantile(1.0) == last and math.isfinite(last)


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        ({"counts": {100000: 1}, "count": 1}, f"bucket index 100000 is outside 0..{MAX_BUCKET}"),
        ({"counts": {-1: 1}, "count": 1}, f"bucket index -1 is outside 0..{MAX_BUCKET}"),
        ({"counts": {3: 2, 4: -1}, "count": 1}, "bucket 4 has a negative count"),
        ({"counts": {3: 2}, "count": 3}, "the bucket counts add up to 2, not count 3"),
        ({"counts": {3: 2}, "count": 2}, "a histogram with latencies has their min_s and max_s"),
    ],
)
def test_a_histogram_out_of_bounds_does_not_read(fields: dict[str, object], problem: str) -> None:
    with pytest.raises(ValidationError, match=problem):
        LatencyHistogram.model_validate(fields)
    # Nor from JSON, as a worker's report brings it: refused as it is read, not when a
    # percentile is (where an index of 100000 overflowed).
    with pytest.raises(ValidationError, match=problem):
        LatencyHistogram.model_validate_json(json.dumps(fields))


def test_a_histogram_in_bounds_reads_back() -> None:
    edge = LatencyHistogram(counts={0: 1, MAX_BUCKET: 2}, count=3, min_s=0.0, max_s=1e9)
    assert LatencyHistogram.model_validate_json(edge.model_dump_json()) == edge
    assert LatencyHistogram.model_validate_json("{}") == LatencyHistogram()
