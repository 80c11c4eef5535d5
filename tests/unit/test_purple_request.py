"""Request validation of the purple agent: every rule, with its exact failure message.

The app runs in-process over ``httpx.ASGITransport``; invalid requests fail before any MCP call,
so no MCP server is needed (the configured one is a closed port).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from a2a.helpers import new_data_part, new_text_part
from a2a.types import Message, Part, Role

from services.common.limits import MAX_QUERY_CHARS
from services.purple_agent.a2a.messages import EXPECTED, parse_message
from services.purple_agent.agent import AgentFailure
from services.purple_agent.app import create_app
from services.purple_agent.settings import PurpleSettings
from tests.support.ports import closed_url


def _msg(*parts: Part) -> Message:
    return Message(role=Role.ROLE_USER, message_id="m", parts=list(parts))


def _fail(detail: str) -> str:
    return f"invalid request: {detail}; expected {EXPECTED}"


LONG = "a" * (MAX_QUERY_CHARS + 1)

# (message text, exact failure message)
BAD_TEXTS = [
    ("   \n ", _fail("the message text is empty")),
    ('{"query": ', _fail("the message text is not JSON (Expecting value at position 10)")),
    ('{"query": ""}', _fail("query must not be empty")),
    ('{"query": "  \\n\\t "}', _fail("query must not be empty")),
    (json.dumps({"query": LONG}), _fail("query must be at most 2000 characters, got 2001")),
    # The escape is in the message's JSON text: the A2A body itself is valid UTF-8.
    (
        '{"query": "vitamin \\ud800"}',
        _fail("query holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape)"),
    ),
    ('{"query": "x", "top_k": 0}', _fail("top_k must be between 1 and 100, got 0")),
    ('{"query": "x", "top_k": 101}', _fail("top_k must be between 1 and 100, got 101")),
    ('{"query": "x", "top_k": -3}', _fail("top_k must be between 1 and 100, got -3")),
    ('{"query": "x", "top_k": "5"}', _fail('top_k must be an integer, got the string "5"')),
    ('{"query": "x", "top_k": 5.5}', _fail("top_k must be an integer, got 5.5")),
    ('{"query": "x", "top_k": true}', _fail("top_k must be an integer, got true")),
    ('{"query": "x", "top_k": null}', _fail("top_k must be an integer, got null")),
    ('{"query": 42}', _fail("query must be a string, got 42")),
    ('{"query": ["a"]}', _fail("query must be a string, got a list")),
    ('{"top_k": 5}', _fail("query is required")),
    ("{}", _fail("query is required")),
    (
        '{"query": 1, "top_k": 0}',
        _fail("query must be a string, got 1; top_k must be between 1 and 100, got 0"),
    ),
    # Text that starts like a JSON object is held to JSON: a typo is not a question.
    (
        '  {"query": "x" "top_k": 5}',
        _fail("the message text is not JSON (Expecting ',' delimiter at position 16)"),
    ),
    ("a" * (MAX_QUERY_CHARS + 1), _fail("query must be at most 2000 characters, got 2001")),
]

# (plain message text, the query it asks): a person's question, asked with top_k 5.
QUESTIONS = [
    ("Does vitamin D protect bones?", "Does vitamin D protect bones?"),
    ("  statins and breast cancer\n", "statins and breast cancer"),
    ("not json", "not json"),
    ('"breast cancer"', "breast cancer"),  # a JSON string is its text
    ("[1, 2]", "[1, 2]"),
    ("7", "7"),
]


@pytest.mark.parametrize(("text", "query"), QUESTIONS)
def test_plain_text_is_the_question(text: str, query: str) -> None:
    request = parse_message(_msg(new_text_part(text)))
    assert (request.query, request.top_k) == (query, 5)


@pytest.mark.parametrize(("text", "message"), BAD_TEXTS)
def test_parse_message_rejects_bad_text(text: str, message: str) -> None:
    with pytest.raises(AgentFailure) as failure:
        parse_message(_msg(new_text_part(text)))
    assert str(failure.value) == message
    assert failure.value.reason == "invalid_request"


def test_parse_message_accepts_text_and_defaults_top_k() -> None:
    request = parse_message(_msg(new_text_part('{"query": "vitamin D"}')))
    assert (request.query, request.top_k) == ("vitamin D", 5)


def test_parse_message_accepts_longest_query_and_ignores_unknown_fields() -> None:
    text = json.dumps({"query": "b" * MAX_QUERY_CHARS, "top_k": 100, "query_id": "PLAIN-1"})
    request = parse_message(_msg(new_text_part(text)))
    assert (len(request.query), request.top_k) == (MAX_QUERY_CHARS, 100)


def test_parse_message_reads_a_data_part_whose_numbers_are_floats() -> None:
    request = parse_message(_msg(new_data_part({"query": "statins", "top_k": 7})))
    assert (request.query, request.top_k) == ("statins", 7)
    assert isinstance(request.top_k, int)


def test_parse_message_prefers_the_data_part_and_joins_split_text() -> None:
    data = _msg(new_text_part("ignored"), new_data_part({"query": "from data"}))
    assert parse_message(data).query == "from data"
    split = _msg(new_text_part('{"query": "sp'), new_text_part('lit", "top_k": 2}'))
    assert (parse_message(split).query, parse_message(split).top_k) == ("split", 2)


def test_parse_message_rejects_a_bad_data_part_and_no_parts() -> None:
    with pytest.raises(AgentFailure, match=r"top_k must be between 1 and 100, got 0"):
        parse_message(_msg(new_data_part({"query": "x", "top_k": 0})))
    with pytest.raises(AgentFailure) as failure:
        parse_message(_msg())
    assert str(failure.value) == _fail("the message has no text or data part")


@pytest.fixture(scope="module")
async def purple() -> AsyncIterator[httpx.AsyncClient]:
    # A port known closed: nothing here may reach an MCP server.
    with closed_url("/mcp") as nobody:
        app = create_app(PurpleSettings(mcp_url=nobody, deadline_s=5))
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            yield client


async def _send_v1(client: httpx.AsyncClient, parts: list[dict[str, object]]) -> dict[str, Any]:
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "SendMessage",
        "params": {"message": {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": parts}},
    }
    response = await client.post("/", json=body, headers={"A2A-Version": "1.0"})
    assert response.status_code == 200
    reply: dict[str, Any] = response.json()
    return reply


@pytest.mark.parametrize(("text", "message"), BAD_TEXTS)
async def test_bad_request_fails_the_task_with_the_exact_message(
    purple: httpx.AsyncClient, text: str, message: str
) -> None:
    reply = await _send_v1(purple, [{"text": text}])
    task = reply["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_FAILED"
    assert task["status"]["message"]["parts"] == [{"text": message}]
    assert "artifacts" not in task


async def test_bad_data_part_fails_the_task(purple: httpx.AsyncClient) -> None:
    reply = await _send_v1(purple, [{"data": {"query": "x", "top_k": 1000}}])
    status = reply["result"]["task"]["status"]
    assert status["state"] == "TASK_STATE_FAILED"
    assert status["message"]["parts"] == [
        {"text": _fail("top_k must be between 1 and 100, got 1000")}
    ]


async def test_empty_text_part_fails_the_task(purple: httpx.AsyncClient) -> None:
    reply = await _send_v1(purple, [{"text": ""}])
    status = reply["result"]["task"]["status"]
    assert status["state"] == "TASK_STATE_FAILED"
    expected = _fail("the message text is empty")
    assert status["message"]["parts"] == [{"text": expected}]
