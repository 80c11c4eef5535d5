"""Hostile requests against the green agent's A2A server (``serve``), in both dialects.

Assessment requests with one part gone wrong (bad JSON, participants and config of other types,
huge numbers, URLs of nobody or of no agent at all), any A2A message, and raw bytes. Every
answer is a JSON-RPC error or a failed task that says what was wrong, or a completed assessment
whose ``results`` artifact holds a consistent report; never -32603, a 5xx or a stack trace. An
assessment naming the real purple agent (loopback) with sane numbers runs for real.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from hypothesis import given
from hypothesis import strategies as st

from harness.processes import McpServer, ServerProcess
from tests.fuzz.a2a_verdict import check_green
from tests.fuzz.assessments import assessment_bodies, assessments, odd_url_examples
from tests.fuzz.payloads import a2a_bodies, content_types, encode, raw_bodies
from tests.fuzz.verdict import Tally, assert_alive
from tests.support.purple import v03_body, v10_body


def test_an_assessment_of_the_purple_agent_completes_with_its_report(
    green_process: ServerProcess,
    purple_process: ServerProcess,
    client: httpx.Client,
    tally: Tally,
) -> None:
    # The verdict's completed branch, reached on purpose rather than left to the draw.
    request = {
        "participants": {"retrieval_agent": purple_process.base_url + "/"},
        "config": {"num_queries": 2, "top_k": 3},
    }
    for body, headers in (
        (v03_body(json.dumps(request)), {}),
        (v10_body([{"data": request}]), {"A2A-Version": "1.0"}),
    ):
        response = client.post(green_process.base_url + "/", json=body, headers=headers)
        kind = check_green(response, body)
        tally.add("a2a green", kind, response)
        assert kind == "completed task", response.text[:600]


def test_every_odd_url_is_answered_as_participant_and_as_search_server(
    green_process: ServerProcess,
    purple_process: ServerProcess,
    client: httpx.Client,
    tally: Tally,
    nobody: str,
) -> None:
    # Each of the URLs the draw picks from, on purpose: "http://[::1/" as the search server
    # once made the green agent answer -32603.
    purple = purple_process.base_url + "/"
    for url in odd_url_examples(nobody):
        for agent, server in ((url, None), (purple, url)):
            config = {
                "num_queries": 1,
                **({"mcp_server_url": server} if server is not None else {}),
            }
            request = {"participants": {"retrieval_agent": agent}, "config": config}
            body = v03_body(json.dumps(request))
            response = client.post(green_process.base_url + "/", json=body)
            tally.add("a2a green", check_green(response, body), response)


@given(data=st.data())
def test_the_green_agent_answers_every_assessment(
    green_process: ServerProcess,
    purple_process: ServerProcess,
    mcp_server: McpServer,
    client: httpx.Client,
    tally: Tally,
    nobody: str,
    data: st.DataObject,
) -> None:
    agents = (purple_process.base_url + "/", nobody, mcp_server.mcp_url)
    headers, body = data.draw(assessment_bodies(*agents), label="request")
    response = client.post(green_process.base_url + "/", content=encode(body), headers=headers)
    tally.add("a2a green", check_green(response, body), response)


@given(data=st.data(), request=a2a_bodies())
def test_the_green_agent_answers_every_message(
    green_process: ServerProcess,
    purple_process: ServerProcess,
    mcp_server: McpServer,
    client: httpx.Client,
    tally: Tally,
    nobody: str,
    data: st.DataObject,
    request: tuple[dict[str, str], Any],
) -> None:
    # Any message (method, envelope, parts off), its first part an assessment request.
    headers, body = request
    params = body.get("params") if isinstance(body, dict) else None
    message = params.get("message") if isinstance(params, dict) else None
    if isinstance(message, dict) and isinstance(message.get("parts"), list) and message["parts"]:
        agents = (purple_process.base_url + "/", nobody, mcp_server.mcp_url)
        assessment = data.draw(assessments(*agents), label="assessment")
        legacy = "kind" in message
        message["parts"][0] = {"kind": "data", "data": assessment} if legacy else {
            "data": assessment
        }  # fmt: skip
    response = client.post(green_process.base_url + "/", content=encode(body), headers=headers)
    tally.add("a2a green", check_green(response, body), response)


@given(body=raw_bodies, content_type=content_types, v10=st.booleans())
def test_the_green_agent_answers_every_body(
    green_process: ServerProcess,
    client: httpx.Client,
    tally: Tally,
    body: bytes,
    content_type: str,
    v10: bool,
) -> None:
    headers = {"content-type": content_type, **({"A2A-Version": "1.0"} if v10 else {})}
    response = client.post(green_process.base_url + "/", content=body, headers=headers)
    tally.add("a2a green", check_green(response, body), response)


def test_the_green_agent_survived(green_process: ServerProcess) -> None:
    assert_alive(green_process)
