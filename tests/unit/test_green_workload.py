"""The load's workload: every NFCorpus query in a seeded order, repeats counted, cache effect read."""

from __future__ import annotations

from services.green_agent.evaluation.dataset import load_test_set
from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.evaluation.mcp_counters import CacheEffect, cache_effect
from services.green_agent.load.run import query_pool
from services.nfcorpus.dataset import DEFAULT_DATA_DIR, load_queries
from tests.support.load_reports import report_of


def test_the_pool_is_every_distinct_query_text_in_a_seeded_order() -> None:
    test_set = load_test_set(DEFAULT_DATA_DIR)
    every = query_pool(DEFAULT_DATA_DIR, "all", test_set.queries, seed=42)
    texts = [text for _, text in every]
    assert len(texts) == len(set(texts)) == len(set(load_queries(DEFAULT_DATA_DIR).values()))
    assert len(every) > 3000  # train, dev and test, not the 323 test queries
    assert every == query_pool(DEFAULT_DATA_DIR, "all", test_set.queries, seed=42)
    assert every != query_pool(DEFAULT_DATA_DIR, "all", test_set.queries, seed=43)
    test_only = query_pool(DEFAULT_DATA_DIR, "test", test_set.queries, seed=42)
    assert {q for q, _ in test_only} <= set(test_set.queries) and len(test_only) <= 323


def test_cache_effect_is_the_difference_of_two_readings() -> None:
    before, after = {"hit": 10.0, "miss": 5.0}, {"hit": 13.0, "miss": 102.0}
    assert cache_effect(before, after) == CacheEffect(lookups=100, hits=3, hit_ratio=0.03)
    assert cache_effect(before, before) == CacheEffect(lookups=0, hits=0, hit_ratio=None)
    assert cache_effect(None, after) is None and cache_effect(before, None) is None


def test_the_report_counts_distinct_queries_and_repeats() -> None:
    outcomes = [QueryOutcome(q, 0.01, ["MED-1"]) for q in ("PLAIN-1", "PLAIN-2", "PLAIN-1")]
    effect = CacheEffect(lookups=3, hits=1, hit_ratio=1 / 3)
    report = report_of(
        outcomes,
        0,
        1.0,
        agent="http://a",
        protocol="1.0",
        duration_s=1.0,
        concurrency=1,
        rate=None,
        query_pool="all",
        pool_size=3216,
        result_cache=effect,
    )
    assert (report.distinct_queries, report.repeats, report.pool_size) == (2, 1, 3216)
    assert report.result_cache == effect
