"""The answer contract on 20 NFCorpus test queries: exactly top_k unique, valid ids."""

from __future__ import annotations

import pytest

from services.green_agent.evaluation.dataset import TestSet, sample_query_ids
from tests.conformance.wire import query_text, send

QUERIES = 20


@pytest.mark.parametrize("top_k", [5, 10])
def test_every_answer_holds_exactly_top_k_unique_corpus_ids(
    rpc_url: str, test_set: TestSet, top_k: int
) -> None:
    broken = []
    for query_id in sample_query_ids(test_set.query_ids, QUERIES, seed=top_k):
        ids = send(rpc_url, query_text(test_set.queries[query_id], top_k)).doc_ids()
        problems = []
        if len(ids) != top_k:
            problems.append(f"{len(ids)} ids")
        if len(set(ids)) != len(ids):
            problems.append("duplicates")
        if unknown := [d for d in ids if d not in test_set.doc_ids]:
            problems.append(f"unknown ids {unknown[:3]}")
        if problems:
            broken.append(f"{query_id}: {', '.join(problems)}")
    assert broken == []
