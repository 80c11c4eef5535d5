"""The evaluation report: trec_eval NDCG on a hand-made example, spread, latency, failures."""

from __future__ import annotations

import math

import pytest
import pytrec_eval

from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.evaluation.report import build_report, latency_stats, percentile, spread
from services.nfcorpus import measures

QRELS = {
    "q1": {"MED-1": 2, "MED-2": 1, "MED-3": 1},
    "q2": {"MED-7": 1},
    "q3": {"MED-9": 2},
}
# q1: a relevant doc at ranks 1 and 3; q2: nothing relevant; q3: no valid reply.
OUTCOMES = [
    QueryOutcome("q1", 0.010, ["MED-2", "MED-8", "MED-1", "MED-5", "MED-6"]),
    QueryOutcome("q2", 0.020, ["MED-4", "MED-5", "MED-6", "MED-8", "MED-9"]),
    QueryOutcome("q3", 0.030, None, "contract", "expected 5 doc ids, got 3"),
]


def _report(top_k: int = 5):
    return build_report(
        OUTCOMES, QRELS, agent="http://a", protocol="1.0", top_k=top_k, seed=1, wall_s=0.5
    )


def test_ndcg_at_5_by_hand_and_by_pytrec_eval() -> None:
    # DCG = 1/log2(2) + 2/log2(4) = 2; ideal = 2 + 1/log2(3) + 1/log2(4).
    q1 = 2.0 / (2.0 + 1.0 / math.log2(3) + 0.5)
    report = _report()
    assert report.queries[0].ndcg["ndcg@5"] == pytest.approx(q1)
    assert report.metrics["ndcg@5"] == pytest.approx(q1 / 3)  # q2 scores 0, q3 failed: 0
    run = {o.query_id: {d: float(10 - i) for i, d in enumerate(o.doc_ids or [])} for o in OUTCOMES}
    run = {q: r for q, r in run.items() if r}
    measured = pytrec_eval.RelevanceEvaluator(QRELS, {"ndcg_cut.5"}).evaluate(run)
    trec = [measured.get(q, {}).get("ndcg_cut_5", 0.0) for q in QRELS]
    assert report.metrics["ndcg@5"] == pytest.approx(sum(trec) / 3)


def test_metrics_agree_with_the_nfcorpus_measures() -> None:
    report = _report()
    run = {o.query_id: o.doc_ids for o in OUTCOMES if o.doc_ids}
    for k in (5, 10):
        for name in ("ndcg", "precision", "recall"):
            expected = measures.mean_over_queries(run, QRELS, name, k)
            assert report.metrics[f"{name}@{k}"] == pytest.approx(expected)
    assert report.metrics["mrr"] == pytest.approx((1.0 + 0 + 0) / 3)


def test_sums_merge_shards_into_the_whole_runs_means() -> None:
    # Shards of 2 and 1 queries: their sums add up to the whole run's, whose mean they give.
    whole = _report()
    shards = [
        build_report(part, QRELS, agent="a", protocol="1.0", top_k=5, seed=1, wall_s=0.5)
        for part in (OUTCOMES[:2], OUTCOMES[2:])
    ]
    for name, mean in whole.metrics.items():
        merged = sum(s.sums[name] for s in shards) / sum(s.num_queries for s in shards)
        assert merged == pytest.approx(mean) and whole.sums[name] == pytest.approx(3 * mean)


def test_agentbeats_variant_uses_the_retrieved_ideal_and_is_labelled() -> None:
    report = _report()
    # Retrieved gains [1, 0, 2, 0, 0]; their ideal order [2, 1]: 2 + 1/log2(3).
    q1 = 2.0 / (2.0 + 1.0 / math.log2(3))
    assert report.metrics["agentbeats_ndcg@5"] == pytest.approx(q1 / 3)
    assert report.metrics["agentbeats_ndcg@5"] >= report.metrics["ndcg@5"]
    assert any("agentbeats_ndcg@k" in note and "retrieved" in note for note in report.notes)


def test_failures_are_listed_with_their_reason() -> None:
    report = _report()
    assert (report.num_queries, report.answered, report.failed) == (3, 2, 1)
    assert report.failures_by_reason == {"contract": 1}
    (failure,) = report.failures
    assert (failure.query_id, failure.reason, failure.message) == (
        "q3",
        "contract",
        "expected 5 doc ids, got 3",
    )


def test_spread_latency_and_throughput() -> None:
    report = _report()
    q1 = report.queries[0].ndcg["ndcg@5"]
    s = report.ndcg_spread["ndcg@5"]
    assert (s.mean, s.median, s.min, s.max) == pytest.approx((q1 / 3, 0.0, 0.0, q1))
    assert s.std == pytest.approx(math.sqrt(((q1 - q1 / 3) ** 2 + 2 * (q1 / 3) ** 2) / 3))
    assert report.latency.p50_s == pytest.approx(0.020)
    assert report.latency.max_s == pytest.approx(0.030)
    assert report.throughput_qps == pytest.approx(6.0)


def test_short_top_k_is_flagged_for_ndcg_at_10() -> None:
    assert any("@10 see only 5 ids" in n for n in _report(5).notes)
    assert not any("see only" in n for n in _report(10).notes)


def test_percentile_interpolates_and_handles_edges() -> None:
    assert percentile([], 50) == 0.0
    assert percentile([3.0], 99) == 3.0
    assert percentile([1.0, 2.0, 3.0, 4.0], 50) == pytest.approx(2.5)
    assert percentile(list(map(float, range(101))), 95) == pytest.approx(95.0)
    assert latency_stats([]).count == 0
    assert spread([]).mean == 0.0


def test_latency_stats_have_the_extremes_and_the_tail() -> None:
    stats = latency_stats([float(v) for v in range(1, 1001)])
    assert (stats.min_s, stats.max_s) == (1.0, 1000.0)
    assert stats.p90_s == pytest.approx(900.1)
    assert stats.p999_s == pytest.approx(999.001)
    assert stats.p50_s < stats.p90_s < stats.p95_s < stats.p99_s < stats.p999_s < stats.max_s
