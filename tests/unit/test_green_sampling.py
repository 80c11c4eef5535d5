"""Seeded, reproducible sampling of test queries; loading the test split."""

from __future__ import annotations

import pytest

from services.green_agent.evaluation.dataset import TestSet, load_test_set, sample_query_ids
from services.nfcorpus.dataset import DEFAULT_DATA_DIR

POPULATION = [f"PLAIN-{i}" for i in range(1, 324)]


def test_same_seed_same_sample_whatever_the_population_order() -> None:
    first = sample_query_ids(POPULATION, 30, seed=42)
    again = sample_query_ids(list(reversed(POPULATION)), 30, seed=42)
    assert first == again
    assert len(set(first)) == 30 and set(first) <= set(POPULATION)


def test_known_draw_is_stable() -> None:
    # Pinned: a change here changes every published report's query set.
    assert sample_query_ids(["a", "b", "c", "d", "e"], 3, seed=42) == ["a", "e", "c"]


def test_other_seed_other_sample_and_all_queries_allowed() -> None:
    assert sample_query_ids(POPULATION, 30, 1) != sample_query_ids(POPULATION, 30, 2)
    everything = sample_query_ids(POPULATION, None, 7)
    assert sorted(everything) == sorted(POPULATION)
    assert sorted(sample_query_ids(POPULATION, 323, 7)) == sorted(POPULATION)


@pytest.mark.parametrize("n", [0, -1, 324])
def test_sample_size_out_of_range_is_refused(n: int) -> None:
    with pytest.raises(ValueError, match=r"num_queries must be within 1\.\.323"):
        sample_query_ids(POPULATION, n, 42)


@pytest.fixture(scope="module")
def test_set() -> TestSet:
    return load_test_set(DEFAULT_DATA_DIR)


def test_the_test_split_has_323_judged_queries(test_set: TestSet) -> None:
    assert len(test_set.query_ids) == 323
    assert set(test_set.queries) == set(test_set.qrels)
    assert all(test_set.queries[q].strip() for q in test_set.query_ids)
    assert len(test_set.doc_ids) == 3633
    judged = {d for docs in test_set.qrels.values() for d in docs}
    assert judged <= test_set.doc_ids
