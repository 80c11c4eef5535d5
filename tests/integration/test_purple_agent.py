"""The purple agent served by uvicorn on loopback, in front of the real MCP server fixture.

Covers the answer contract, both JSON-RPC dialects, bad input over HTTP, health and metrics;
faults (a silent or stopped MCP server) are in ``test_purple_agent_faults.py``.
"""

from __future__ import annotations

import json
import re

import httpx
import pytest

from harness.processes import McpServer
from services.green_agent.evaluation.answer_contract import check_reply, legacy_concatenation
from services.green_agent.evaluation.client import SdkAgentClient, reply_from_v03_result
from services.green_agent.evaluation.dataset import TestSet, load_test_set
from services.green_agent.evaluation.evaluator import evaluate
from services.nfcorpus.dataset import DEFAULT_DATA_DIR
from services.purple_agent.a2a.messages import EXPECTED
from tests.support.purple import ThreadedServer, v03_body, v10_body


@pytest.fixture(scope="module")
def test_set() -> TestSet:
    return load_test_set(DEFAULT_DATA_DIR)


async def test_every_reply_meets_the_contract(purple: ThreadedServer, test_set: TestSet) -> None:
    client = await SdkAgentClient.connect(purple.url, timeout_s=30, max_connections=8)
    try:
        query_ids = test_set.query_ids[:30]
        outcomes, _ = await evaluate(client, test_set, query_ids, top_k=10, concurrency=4)
        assert [o.error for o in outcomes if not o.ok] == []
        assert len(outcomes) == 30
        for top_k in (1, 100):
            reply = await client.ask(test_set.queries[query_ids[0]], top_k)
            assert len(check_reply(reply, top_k, test_set.doc_ids)) == top_k
    finally:
        await client.aclose()


async def test_0_3_and_1_0_dialects_answer_in_their_own_shapes(
    purple: ThreadedServer, http: httpx.AsyncClient
) -> None:
    text = json.dumps({"query": "statins and breast cancer", "top_k": 5})
    legacy = (await http.post(purple.url + "/", json=v03_body(text))).json()
    task = legacy["result"]
    assert task["kind"] == "task"
    assert task["status"]["state"] == "completed"
    assert "message" not in task["status"]
    (artifact,) = task["artifacts"]
    assert artifact["name"] == "retrieval_results"
    (part,) = artifact["parts"]
    assert part["kind"] == "data"
    ids = part["data"]["doc_ids"]
    assert len(ids) == 5 and len(set(ids)) == 5 and all(re.fullmatch(r"MED-\d+", d) for d in ids)
    # What a 0.3 green agent does with the reply: concatenate, then json.loads.
    assert json.loads(legacy_concatenation(reply_from_v03_result(task))) == {"doc_ids": ids}

    headers = {"A2A-Version": "1.0"}
    body = v10_body([{"text": text}])
    current = (await http.post(purple.url + "/", json=body, headers=headers)).json()
    task = current["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    (artifact,) = task["artifacts"]
    assert artifact["name"] == "retrieval_results"
    assert artifact["parts"] == [{"data": {"doc_ids": ids}}]


async def test_a_1_0_method_without_the_version_header_is_refused(
    purple: ThreadedServer, http: httpx.AsyncClient
) -> None:
    body = v10_body([{"text": '{"query": "x"}'}])
    reply = (await http.post(purple.url + "/", json=body)).json()
    assert "error" in reply


async def test_a_data_part_request_is_answered(
    purple: ThreadedServer, http: httpx.AsyncClient
) -> None:
    body = v10_body([{"data": {"query": "vitamin D deficiency", "top_k": 3}}])
    reply = (await http.post(purple.url + "/", json=body, headers={"A2A-Version": "1.0"})).json()
    (artifact,) = reply["result"]["task"]["artifacts"]
    assert len(artifact["parts"][0]["data"]["doc_ids"]) == 3


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        (
            '{"query": "x" "top_k": 3}',
            "the message text is not JSON (Expecting ',' delimiter at position 14)",
        ),
        ('{"query": ""}', "query must not be empty"),
        (json.dumps({"query": "q" * 2001}), "query must be at most 2000 characters, got 2001"),
        ('{"query": "x", "top_k": 0}', "top_k must be between 1 and 100, got 0"),
        ('{"query": "x", "top_k": 101}', "top_k must be between 1 and 100, got 101"),
        ('{"query": "x", "top_k": "3"}', 'top_k must be an integer, got the string "3"'),
        ('{"query": 3}', "query must be a string, got 3"),
        ('{"top_k": 3}', "query is required"),
    ],
)
async def test_bad_input_over_0_3_fails_with_the_exact_message(
    purple: ThreadedServer, http: httpx.AsyncClient, text: str, detail: str
) -> None:
    task = (await http.post(purple.url + "/", json=v03_body(text))).json()["result"]
    assert task["status"]["state"] == "failed"
    expected = f"invalid request: {detail}; expected {EXPECTED}"
    assert task["status"]["message"]["parts"] == [{"kind": "text", "text": expected}]
    assert not task.get("artifacts")


async def test_a_typed_question_is_answered_with_five_ids(
    purple: ThreadedServer, http: httpx.AsyncClient, test_set: TestSet
) -> None:
    legacy = await http.post(purple.url + "/", json=v03_body("Does vitamin D protect bones?"))
    task = legacy.json()["result"]
    assert task["status"]["state"] == "completed"
    (artifact,) = task["artifacts"]
    ids = artifact["parts"][0]["data"]["doc_ids"]
    assert len(ids) == len(set(ids)) == 5 and set(ids) <= test_set.doc_ids
    # The same question as the seed's JSON form gets the same answer.
    asked = json.dumps({"query": "Does vitamin D protect bones?", "top_k": 5})
    same = (await http.post(purple.url + "/", json=v03_body(asked))).json()["result"]
    assert same["artifacts"][0]["parts"][0]["data"]["doc_ids"] == ids


async def test_cancel_is_refused(purple: ThreadedServer, http: httpx.AsyncClient) -> None:
    task = (await http.post(purple.url + "/", json=v03_body('{"query": "x"}'))).json()["result"]
    body = {"jsonrpc": "2.0", "id": 3, "method": "tasks/cancel", "params": {"id": task["id"]}}
    reply = (await http.post(purple.url + "/", json=body)).json()
    assert "error" in reply and "result" not in reply


async def test_health_readiness_and_metrics(
    purple: ThreadedServer, http: httpx.AsyncClient
) -> None:
    assert (await http.get(purple.url + "/healthz")).json() == {"status": "ok"}
    ready = await http.get(purple.url + "/readyz")
    assert (ready.status_code, ready.json()["status"]) == (200, "ready")
    await http.post(purple.url + "/", json=v03_body('{"query": "fish oil"}'))
    await http.post(purple.url + "/", json=v03_body('{"query": ""}'))
    text = (await http.get(purple.url + "/metrics")).text
    assert 'purple_request_duration_seconds_count{outcome="completed"}' in text
    assert 'purple_request_duration_seconds_count{outcome="failed"}' in text
    assert 'purple_mcp_call_duration_seconds_count{outcome="ok"}' in text
    assert 'purple_request_failures_total{reason="invalid_request"}' in text
    assert "purple_requests_in_flight" in text
    # Per-route latency from the service frame, like the MCP server's.
    for route in ("/", "/healthz", "/readyz"):
        sample = f'purple_http_request_duration_seconds_count{{caller="anonymous",outcome="ok",route="{route}"}}'
        assert sample in text, route


async def test_the_agent_asks_for_hits_without_abstracts(
    purple: ThreadedServer, mcp_server: McpServer, http: httpx.AsyncClient
) -> None:
    body = v03_body(json.dumps({"query": "include text probe", "top_k": 3}))
    assert (await http.post(purple.url + "/", json=body)).json()["result"]["status"]["state"] == (
        "completed"
    )
    lines = [json.loads(line) for line in mcp_server.log().split("\n") if line.startswith("{")]
    (call,) = [line for line in lines if line.get("query", "").startswith("include text probe")]
    assert call["route"] == "/mcp" and call["include_text"] is False
