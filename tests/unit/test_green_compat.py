"""The public evaluator's leaderboard figures, on hand-made answers."""

from __future__ import annotations

import math

import pytest

from services.green_agent.assessment.leaderboard import leaderboard_keys, query_figures
from services.green_agent.evaluation.answer_contract import Reply, ReplyPart, loose_doc_ids
from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.evaluation.mcp_counters import health_check_url, qdrant_calls_total

JUDGED = {"D1": 2, "D2": 1, "D3": 0, "D9": 1}  # D3 judged not relevant; D9 never retrieved


def test_one_answer_scores_as_that_evaluator_scores_it() -> None:
    figures = query_figures(["D3", "D2", "X", "D1", "Y"], JUDGED, k=5)
    dcg = 1 / math.log2(3) + 2 / math.log2(5)
    ideal = 2 + 1 / math.log2(3)  # from the retrieved gains only: 2, 1, 0, 0, 0
    assert figures["ndcg"] == pytest.approx(dcg / ideal)
    assert figures["mrr"] == 0.5  # first relevant at rank 2
    assert figures["precision"] == 2 / 5
    assert figures["recall"] == 2 / 3  # of D1, D2, D9


def test_precision_divides_by_the_ids_returned_and_cutoffs_apply() -> None:
    assert query_figures(["D1"], JUDGED, k=5)["precision"] == 1.0  # not 1/5
    assert query_figures(["X", "D1"], JUDGED, k=1) == {
        "ndcg": 0.0,
        "mrr": 0.0,
        "precision": 0.0,
        "recall": 0.0,
    }
    assert query_figures([], JUDGED, k=5)["precision"] == 0.0
    assert query_figures(["D1"], {}, k=5)["ndcg"] == 0.0


def _reply(data: object, state: str = "completed") -> Reply:
    return Reply(state, [], [[ReplyPart("data", data)]])


def test_a_reply_is_read_as_a_0_3_client_reads_it() -> None:
    assert loose_doc_ids(_reply({"doc_ids": ["D1", "D1", "X"]})) == ["D1", "D1", "X"]
    assert loose_doc_ids(_reply({"ids": ["D1"]})) == []
    assert loose_doc_ids(_reply({"doc_ids": [1, 2]})) == []
    failed = Reply("failed", [ReplyPart("text", "retrieval failed")], [])
    assert loose_doc_ids(failed) == []


def test_leaderboard_keys_of_a_run() -> None:
    outcomes = [
        QueryOutcome("Q1", 0.1, ["D1", "D2"], loose_doc_ids=["D1", "D2"]),
        QueryOutcome("Q2", 0.1, None, "contract", "3 ids", loose_doc_ids=["D9", "D1", "X"]),
        QueryOutcome("Q3", 5.0, None, "timeout", "no reply"),  # no communication
    ]
    qrels = {"Q1": JUDGED, "Q2": JUDGED, "Q3": JUDGED}
    keys = leaderboard_keys(outcomes, qrels, top_k=2, wall_s=12.345, vector_search_calls=7)
    assert keys == {
        # Q2's gains 1, 2 against the ideal 2, 1: (1 + 2/log2 3) / (2 + 1/log2 3) = 0.86
        "mean_ndcg_at_k": 0.62,  # (1 + 0.86 + 0) / 3
        "mean_mrr_at_k": 0.67,  # (1 + 1 + 0) / 3
        "mean_precision_at_k": 0.67,  # (2/2 + 2/2 + 0) / 3
        "mean_recall_at_k": 0.44,  # (2/3 + 2/3 + 0) / 3
        "execution_time_seconds": 12.35,
        "total_queries": 3,
        "successful_communications": 2,
        "vector_search_calls_total": 7,
    }
    no_server = leaderboard_keys(outcomes, qrels, 2, 1.0, None)["vector_search_calls_total"]
    assert no_server == 0


def test_the_health_check_is_found_from_a_base_url_or_the_mcp_endpoint() -> None:
    for url in (
        "http://mcp:8000",
        "http://mcp:8000/",
        "http://mcp:8000/mcp",
        "http://mcp:8000/mcp/",
    ):
        assert health_check_url(url) == "http://mcp:8000/health_check"


@pytest.mark.parametrize("url", ["http://[::1/", "http://", "", "javascript:alert(1)", "ftp://x/"])
async def test_a_server_url_that_is_no_url_counts_no_calls(url: str) -> None:
    # Nothing is sent: the URL fails before any connection (the fuzzer's "http://[::1/" once
    # made the green agent answer -32603).
    assert await qdrant_calls_total(url) is None
