"""One report from several load generators: counts added, percentiles from merged histograms,
each worker's share of the pace, and a generator that could not keep up named."""

from __future__ import annotations

import random

import pytest

from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.load.histogram import LatencyHistogram
from services.green_agent.load.recorder import merge_load_reports
from services.green_agent.load.report import LoadReport
from services.green_agent.load.timeline import histogram_stats
from services.green_agent.load.workers import Share
from tests.support.load_reports import report_of

T0 = 500.0
DURATION_S = 10.0


def _outcomes(seed: int, n: int) -> list[QueryOutcome]:
    rng = random.Random(seed)
    out = []
    for i in range(n):
        started, latency = rng.uniform(0, DURATION_S), rng.lognormvariate(-4, 0.8)
        if i % 9 == 0:
            reason = "timeout" if i % 2 else "contract"
            out.append(QueryOutcome(f"q{i}", latency, None, reason, "x", started_s=T0 + started))
        else:
            out.append(QueryOutcome(f"q{i}", latency, ["MED-1"], started_s=T0 + started))
    return out


def _worker(outcomes: list[QueryOutcome], worker: int, rate: float, cpu_s: float) -> LoadReport:
    return report_of(
        outcomes,
        dropped=worker,
        wall_s=DURATION_S,
        agent="http://agent",
        protocol="1.0",
        duration_s=DURATION_S,
        concurrency=None,
        rate=rate,
        worker=worker,
        cpu_s=cpu_s,
    )


def test_counts_add_up_and_percentiles_come_from_the_merged_histogram() -> None:
    parts = [_outcomes(seed, n) for seed, n in ((1, 300), (2, 290), (3, 310))]
    workers = [_worker(p, i, 30.0, 1.0) for i, p in enumerate(parts)]
    merged = merge_load_reports(workers)
    everything = [o for part in parts for o in part]
    assert merged.requests == sum(w.requests for w in workers) == len(everything) == 900
    assert merged.ok == sum(w.ok for w in workers) == merged.latencies.count
    assert merged.errors == sum(w.errors for w in workers) == merged.error_latencies.count
    assert merged.dropped == 0 + 1 + 2
    assert merged.errors_by_reason == {
        r: sum(w.errors_by_reason.get(r, 0) for w in workers) for r in ("timeout", "contract")
    }
    # The percentiles are those of every answer, as one generator would have recorded them.
    one = LatencyHistogram.of(o.latency_s for o in everything if o.ok)
    exact = histogram_stats(one)
    assert merged.latency.model_copy(update={"mean_s": exact.mean_s}) == exact
    assert merged.latency.mean_s == pytest.approx(
        exact.mean_s, rel=1e-12
    )  # sums add up to rounding
    assert merged.latency.p99_s != pytest.approx(sum(w.latency.p99_s for w in workers) / 3)
    # The timelines merge bucket by bucket.
    assert [p.answered for p in merged.timeline] == [
        sum(w.timeline[i].answered for w in workers) for i in range(len(merged.timeline))
    ]
    assert sum(p.latencies.count for p in merged.timeline) == merged.ok
    assert sum(b.count for b in merged.latency_histogram) == merged.ok
    assert merged.target_rate == 90.0 and merged.cpu_s == 3.0
    assert [w.worker for w in merged.workers] == [0, 1, 2] and not merged.generator_bound


def test_a_generator_that_could_not_keep_up_is_named() -> None:
    # Worker 1 used 95% of a core; worker 2 started 20/s of the 30/s it was asked for.
    workers = [
        _worker(_outcomes(1, 300), 0, 30.0, 2.0),
        _worker(_outcomes(2, 300), 1, 30.0, 9.5),
        _worker(_outcomes(3, 200), 2, 30.0, 1.0),
    ]
    merged = merge_load_reports(workers)
    assert merged.generator_bound == [
        "worker 1: its process used 95% of a core",
        "worker 2: started 20.0/s of the 30/s asked",
    ]
    assert merged.workers[1].cpu_ms_per_request == pytest.approx(9500 / 300)
    assert merged.workers[0].core_share == pytest.approx(0.2)


def test_reports_of_different_runs_do_not_merge() -> None:
    a = _worker(_outcomes(1, 50), 0, 10.0, 1.0)
    other = a.model_copy(update={"agent": "http://elsewhere"})
    with pytest.raises(ValueError, match="ran"):
        merge_load_reports([a, other])
    revision_2 = a.model_copy(update={"worker": 1, "run": "release-r2"})
    with pytest.raises(ValueError, match="release-r2"):
        merge_load_reports([a, revision_2])
    with pytest.raises(ValueError, match="no worker reports"):
        merge_load_reports([])


def test_the_workers_share_the_pace_and_draw_disjoint_queries() -> None:
    shares = [Share(i, 3) for i in range(3)]
    assert [s.concurrency(8) for s in shares] == [3, 3, 2]
    assert [s.rate(90.0) for s in shares] == [30.0, 30.0, 30.0]
    pool = [f"q{i}" for i in range(10)]
    slices = [s.queries(pool) for s in shares]
    assert sorted(q for part in slices for q in part) == sorted(pool)
    assert all(set(a).isdisjoint(b) for i, a in enumerate(slices) for b in slices[i + 1 :])
    with pytest.raises(ValueError, match="cannot be split"):
        Share(0, 3).concurrency(2)
    with pytest.raises(ValueError, match="index"):
        Share(3, 3)
