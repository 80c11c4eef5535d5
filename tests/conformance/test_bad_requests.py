"""Bad requests get a clear answer: a failed task or a JSON-RPC error that says why, never a 5xx."""

from __future__ import annotations

import httpx
import pytest

from tests.conformance.wire import TIMEOUT_S, message_body, post, send


@pytest.mark.parametrize(
    "text",
    [
        '{"query": ""}',
        '{"query": "vitamin D", "top_k": 0}',
        '{"query": "vitamin D", "top_k": "x"}',
        '{"query": "vitamin D", "top_k": 100000}',
        '{"top_k": 5}',
    ],
)
def test_a_request_off_the_contract_fails_its_task_with_a_reason(rpc_url: str, text: str) -> None:
    answer = send(rpc_url, text)
    assert answer.state in ("failed", "rejected"), (text, answer)
    assert answer.status_text.strip(), f"{text}: the failure gives no reason"
    assert answer.artifacts == []


def test_an_unknown_method_is_method_not_found(rpc_url: str) -> None:
    body = {**message_body("x"), "method": "message/shout"}
    reply = post(rpc_url, body)
    assert reply.status_code == 200
    assert reply.json()["error"]["code"] == -32601


def test_a_body_that_is_not_json_is_a_parse_error(rpc_url: str) -> None:
    reply = httpx.post(
        rpc_url,
        content=b"{not json",
        headers={"content-type": "application/json"},
        timeout=TIMEOUT_S,
    )
    assert reply.status_code < 500
    error = reply.json()["error"]
    assert error["code"] == -32700 and error["message"]


def test_a_message_without_parts_is_an_invalid_request(rpc_url: str) -> None:
    body = message_body("x")
    body["params"]["message"]["parts"] = []
    reply = post(rpc_url, body)
    assert reply.status_code < 500
    payload = reply.json()
    if "error" in payload:
        assert payload["error"]["message"]
    else:  # or a failed task that says why
        status = payload["result"]["status"]
        assert status["state"] in ("failed", "rejected") and status.get("message")
