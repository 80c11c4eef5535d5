"""Hostile A2A requests against the purple agent, in both dialects.

Every answer is a JSON-RPC error that says what was wrong, a failed task with a message, or a
correct answer read in full (the contract's one artifact: ``top_k`` unique indexed ids); never
-32603, a 5xx or a stack trace; the agent is alive afterwards. The green agent's turn is in
``test_fuzz_green.py``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
from hypothesis import given
from hypothesis import strategies as st

from harness.processes import ServerProcess
from tests.fuzz.a2a_verdict import check_a2a
from tests.fuzz.payloads import a2a_bodies, content_types, encode, raw_bodies, retrieval_bodies
from tests.fuzz.verdict import Contract, Tally, assert_alive
from tests.support.purple import v03_body, v10_body


@given(request=a2a_bodies())
def test_the_purple_agent_answers_every_message(
    purple_process: ServerProcess,
    client: httpx.Client,
    tally: Tally,
    contract: Contract,
    request: tuple[dict[str, str], Any],
) -> None:
    headers, body = request
    response = client.post(purple_process.base_url + "/", content=encode(body), headers=headers)
    tally.add("a2a purple", check_a2a(response, body, contract), response)


@given(request=retrieval_bodies())
def test_the_purple_agent_answers_every_retrieval_request(
    purple_process: ServerProcess,
    client: httpx.Client,
    tally: Tally,
    contract: Contract,
    request: tuple[dict[str, str], Any],
) -> None:
    headers, body = request
    response = client.post(purple_process.base_url + "/", content=encode(body), headers=headers)
    tally.add("a2a purple", check_a2a(response, body, contract), response)


@given(body=raw_bodies, content_type=content_types, v10=st.booleans())
def test_the_purple_agent_answers_every_body(
    purple_process: ServerProcess,
    client: httpx.Client,
    tally: Tally,
    contract: Contract,
    body: bytes,
    content_type: str,
    v10: bool,
) -> None:
    headers = {"content-type": content_type, **({"A2A-Version": "1.0"} if v10 else {})}
    response = client.post(purple_process.base_url + "/", content=body, headers=headers)
    tally.add("a2a purple", check_a2a(response, body, contract), response)


def test_an_answer_of_the_purple_agent_is_read_in_full(
    purple_process: ServerProcess, client: httpx.Client, tally: Tally, contract: Contract
) -> None:
    # The verdict's completed branch, reached on purpose rather than left to the draw.
    request = {"query": "statins and breast cancer", "top_k": 4}
    for body, headers in (
        (v03_body(json.dumps(request)), {}),
        (v10_body([{"data": request}]), {"A2A-Version": "1.0"}),
    ):
        response = client.post(purple_process.base_url + "/", json=body, headers=headers)
        kind = check_a2a(response, body, contract)
        tally.add("a2a purple", kind, response)
        assert kind == "completed task", response.text[:600]


def test_the_purple_agent_survived(purple_process: ServerProcess) -> None:
    assert_alive(purple_process)
