"""Hostile requests against the MCP server: ``POST /search_nfcorpus`` and the MCP tool.

Both answer every request with a result (read in full: the tool's output schema, ``top_k``
unique indexed ids), a 4xx or an error that says what was wrong, apply the same validation
rules, and are still alive afterwards.
"""

from __future__ import annotations

from typing import Any

import httpx
from hypothesis import given
from hypothesis import strategies as st

from harness.processes import McpServer
from tests.fuzz.payloads import (
    MCP_HEADERS,
    content_types,
    deep_json,
    encode,
    mcp_bodies,
    raw_bodies,
    search_payloads,
)
from tests.fuzz.verdict import Contract, Tally, assert_alive, check_mcp, check_rest

JSON = {"content-type": "application/json"}


@given(payload=search_payloads())
def test_rest_answers_every_payload(
    mcp_server: McpServer, client: httpx.Client, tally: Tally, contract: Contract, payload: Any
) -> None:
    response = client.post(
        mcp_server.base_url + "/search_nfcorpus",
        content=encode(payload),
        headers={"content-type": "application/json"},
    )
    tally.add("rest", check_rest(response, payload, contract), response)


@given(body=raw_bodies, content_type=content_types)
def test_rest_answers_every_body(
    mcp_server: McpServer,
    client: httpx.Client,
    tally: Tally,
    contract: Contract,
    body: bytes,
    content_type: str,
) -> None:
    response = client.post(
        mcp_server.base_url + "/search_nfcorpus",
        content=body,
        headers={"content-type": content_type},
    )
    tally.add("rest", check_rest(response, body, contract), response)


@given(body=mcp_bodies())
def test_mcp_answers_every_tool_call(
    mcp_server: McpServer, client: httpx.Client, tally: Tally, contract: Contract, body: Any
) -> None:
    response = client.post(mcp_server.mcp_url, content=encode(body), headers=MCP_HEADERS)
    tally.add("mcp", check_mcp(response, body, contract), response)


@given(body=st.one_of(raw_bodies, deep_json.map(str.encode)), content_type=content_types)
def test_mcp_answers_every_body(
    mcp_server: McpServer,
    client: httpx.Client,
    tally: Tally,
    contract: Contract,
    body: bytes,
    content_type: str,
) -> None:
    headers = {**MCP_HEADERS, "content-type": content_type}
    response = client.post(mcp_server.mcp_url, content=body, headers=headers)
    tally.add("mcp", check_mcp(response, body, contract), response)


@given(payload=search_payloads())
def test_rest_and_the_tool_accept_and_refuse_the_same_arguments(
    mcp_server: McpServer, client: httpx.Client, payload: Any
) -> None:
    # As every caller of the REST search sends it: another Content-Type is refused (415).
    rest = client.post(
        mcp_server.base_url + "/search_nfcorpus", content=encode(payload), headers=JSON
    )
    call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call"}
    call["params"] = {"name": "search_nfcorpus", "arguments": payload}
    tool = client.post(mcp_server.mcp_url, content=encode(call), headers=MCP_HEADERS).json()
    tool_ok = "result" in tool and not tool["result"].get("isError")
    assert (rest.status_code == 200) == tool_ok, (payload, rest.text[:300], str(tool)[:300])


def test_a_search_answer_is_read_in_full(
    mcp_server: McpServer, client: httpx.Client, tally: Tally, contract: Contract
) -> None:
    # The verdicts' "ok" branches, reached on purpose rather than left to the draw.
    payload = {"query": "vitamin D and bone health", "top_k": 7}
    rest = client.post(mcp_server.base_url + "/search_nfcorpus", json=payload)
    assert check_rest(rest, payload, contract) == "ok"
    call = {"jsonrpc": "2.0", "id": 3, "method": "tools/call"}
    call["params"] = {"name": "search_nfcorpus", "arguments": payload}
    tool = client.post(mcp_server.mcp_url, content=encode(call), headers=MCP_HEADERS)
    assert check_mcp(tool, call, contract) == "ok"
    tally.add("mcp", "ok", tool)


def test_the_server_survived(mcp_server: McpServer) -> None:
    assert_alive(mcp_server)
