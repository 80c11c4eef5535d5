"""One query, as a blocking call, as a stream and as a person types it."""

from __future__ import annotations

from typing import Any

import pytest

from services.green_agent.evaluation.dataset import TestSet
from tests.conformance.wire import query_text, send, stream


def _a_query(test_set: TestSet) -> str:
    return test_set.queries[test_set.query_ids[0]]


def test_a_blocking_message_send_answers_with_one_data_artifact(
    rpc_url: str, test_set: TestSet
) -> None:
    ids = send(rpc_url, query_text(_a_query(test_set), 5)).doc_ids()
    assert len(ids) == 5


def test_a_streamed_message_ends_completed_with_the_same_artifact(
    rpc_url: str, card: dict[str, Any], test_set: TestSet
) -> None:
    if not card.get("capabilities", {}).get("streaming"):
        pytest.skip("the card says the agent does not stream")
    answer, events = stream(rpc_url, query_text(_a_query(test_set), 5))
    assert len(answer.doc_ids()) == 5
    final = events[-1]
    assert final["kind"] == "status-update" and final["final"] is True
    assert final["status"]["state"] == "completed"


def test_a_plain_text_question_is_answered_with_five_ids(rpc_url: str) -> None:
    ids = send(rpc_url, "Does vitamin D protect bones?").doc_ids()
    assert len(ids) == 5  # the evaluator's default top_k
