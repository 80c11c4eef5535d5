"""Quality through the whole path, on the suite's small index: the purple agent over A2A ranks
the judged documents of the subset's test queries well above what the hybrid first stage alone
manages, so losing the learned stages (the ranker, the kNN votes, feedback) fails the suite
before any image is built (the image and the chart's pods hold the full figure: MIN_NDCG5).

The index holds the judged documents of its 30 test queries (up to 12 each) among distractors;
NDCG@5 is computed against the judgements of the documents it holds, so a perfect ranking
scores 1. The code scores 0.544 served and 0.403 with the hybrid stage alone (2026-11-26); the
floors sit 0.04 under both figures: they catch a lost stage, not the last bits of another CPU's
floating point (about 0.003 on the full index).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from harness.processes import ServerProcess
from services.green_agent.evaluation.client import connect
from services.green_agent.evaluation.dataset import TestSet
from services.green_agent.evaluation.evaluator import evaluate
from services.nfcorpus.dataset import load_corpus, load_qrels, load_queries
from services.nfcorpus.measures import ndcg_at_k
from tests.support.small_index import SmallIndex

SERVED_FLOOR = 0.50
LEARNED_GAIN = 0.10  # what the ranker, the votes and feedback add over the hybrid stage


@pytest.fixture(scope="module")
def hybrid_only(
    small_index: SmallIndex, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    env = {**small_index.env(private_copy=True), "RETRIEVAL_MODE": "zero-shot"}
    log = tmp_path_factory.mktemp("logs") / "mcp_hybrid.log"
    with ServerProcess.module("services.mcp_server", env=env, log_path=log) as server:
        yield server


def _judged(small_index: SmallIndex) -> dict[str, dict[str, int]]:
    data = small_index.settings.data_dir
    held = {d.doc_id for d in load_corpus(data)}
    qrels = load_qrels(data, "test")
    return {q: {d: g for d, g in qrels[q].items() if d in held} for q in small_index.query_ids}


def _mean_ndcg5(ranked: dict[str, list[str]], judged: dict[str, dict[str, int]]) -> float:
    return sum(ndcg_at_k(ranked[q], judged[q], 5) for q in judged) / len(judged)


async def test_the_served_path_ranks_far_above_the_hybrid_stage_alone(
    small_index: SmallIndex, purple_agent: ServerProcess, hybrid_only: ServerProcess
) -> None:
    data = small_index.settings.data_dir
    queries, judged = load_queries(data), _judged(small_index)
    held = frozenset(d.doc_id for d in load_corpus(data))
    test_set = TestSet({q: queries[q] for q in judged}, judged, held)
    # The served path: the green agent's own A2A client, as an evaluation sends them.
    client = await connect(purple_agent.base_url, "1.0")
    try:
        outcomes, _ = await evaluate(client, test_set, sorted(judged), 5, concurrency=4)
    finally:
        await client.aclose()
    assert all(o.ok for o in outcomes), [o.reason for o in outcomes if not o.ok]
    served = {o.query_id: o.doc_ids or [] for o in outcomes}
    hybrid: dict[str, list[str]] = {}
    async with httpx.AsyncClient(base_url=hybrid_only.base_url, timeout=30) as http:
        for q in judged:
            body: dict[str, Any] = {"query": queries[q], "top_k": 5, "include_text": False}
            answer = (await http.post("/search_nfcorpus", json=body)).raise_for_status()
            hybrid[q] = [h["doc_id"] for h in answer.json()["results"]]
    served_ndcg5, hybrid_ndcg5 = _mean_ndcg5(served, judged), _mean_ndcg5(hybrid, judged)
    assert served_ndcg5 >= SERVED_FLOOR, (served_ndcg5, hybrid_ndcg5)
    assert served_ndcg5 - hybrid_ndcg5 >= LEARNED_GAIN, (served_ndcg5, hybrid_ndcg5)
