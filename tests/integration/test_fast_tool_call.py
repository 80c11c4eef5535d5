"""The server's own ``tools/call`` path answers exactly what the MCP SDK answers.

Two real servers over the same index: the suite's (fast path on, the default) and one with
``MCP_FAST_TOOL_CALL=false`` (every request to the SDK). The same requests, over raw HTTP and
through the SDK's client, get the same status, headers and bytes from both; the fast path's
counter tells which requests it answered itself (well-formed search calls, valid arguments or
not) and which it left to the SDK (everything else).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import Client

from tests.conftest import McpServer, SmallIndex

VERSION = "2026-07-28"
META = {
    "io.modelcontextprotocol/protocolVersion": VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "test", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
HEADERS = [
    ("accept", "application/json, text/event-stream"),
    ("content-type", "application/json"),
    ("mcp-protocol-version", VERSION),
    ("mcp-method", "tools/call"),
    ("mcp-name", "search_nfcorpus"),
]
#: Response headers that differ between any two answers.
VARYING = {"date", "traceresponse"}


@pytest.fixture(scope="module")
def sdk_server(
    small_index: SmallIndex, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpServer]:
    log = tmp_path_factory.mktemp("logs") / "mcp_sdk_only.log"
    env = {**small_index.env(private_copy=True), "MCP_FAST_TOOL_CALL": "false"}
    with McpServer.module("services.mcp_server", env=env, log_path=log) as server:
        yield server


def call(arguments: Any, request_id: Any = 7, **params: Any) -> dict[str, Any]:
    """A tools/call envelope of the search tool."""
    body = {"name": "search_nfcorpus", "arguments": arguments, "_meta": META, **params}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": body}


def with_header(name: str, value: str | None) -> list[tuple[str, str]]:
    """:data:`HEADERS` with ``name`` replaced (or dropped for None)."""
    kept = [(k, v) for k, v in HEADERS if k != name]
    return kept if value is None else [*kept, (name, value)]


Q = {"query": "vitamin D and bone health", "top_k": 5}
#: name, body, headers; answered by the fast path.
FAST: list[tuple[str, Any, list[tuple[str, str]]]] = [
    ("search", call(Q), HEADERS),
    ("without text", call({**Q, "top_k": 20, "include_text": False}), HEADERS),
    ("string id", call(Q, request_id="req-1"), HEADERS),
    ("non-ASCII query", call({"query": "café, señor — Ü vitamin", "top_k": 3}), HEADERS),
    ("top_k 0", call({**Q, "top_k": 0}), HEADERS),
    ("top_k a string", call({**Q, "top_k": "5"}), HEADERS),
    ("unknown argument", call({**Q, "colour": "red"}), HEADERS),
    ("no arguments", call({}), HEADERS),
    ("blank query", call({"query": "   "}), HEADERS),
    ("long query", call({"query": "a" * 2001}), HEADERS),
    (
        "trace context in _meta",
        call(Q, _meta={**META, "traceparent": "00-" + "1" * 32 + "-" + "2" * 16 + "-01"}),
        HEADERS,
    ),
]
#: Left to the SDK.
SDK: list[tuple[str, Any, list[tuple[str, str]]]] = [
    (
        "other tool",
        {**call(Q), "params": {**call(Q)["params"], "name": "nope"}},
        with_header("mcp-name", "nope"),
    ),
    ("arguments a list", call([1, 2]), HEADERS),
    ("name header mismatch", call(Q), with_header("mcp-name", "other")),
    ("method header missing", call(Q), with_header("mcp-method", None)),
    ("no _meta", {**call(Q), "params": {"name": "search_nfcorpus", "arguments": Q}}, HEADERS),
    ("handshake era", call(Q), with_header("mcp-protocol-version", None)),
    ("unknown version", call(Q), with_header("mcp-protocol-version", "2099-01-01")),
    ("event stream only", call(Q), with_header("accept", "text/event-stream")),
    ("text content type", call(Q), with_header("content-type", "text/plain")),
    ("foreign host", call(Q), with_header("host", "evil.example:80")),
    ("foreign origin", call(Q), with_header("origin", "http://evil.example")),
    ("notification", {k: v for k, v in call(Q).items() if k != "id"}, HEADERS),
    ("request state", call(Q, requestState="x"), HEADERS),
    ("Mcp-Param header", call(Q), [*HEADERS, ("mcp-param-query", "x")]),
    ("duplicate method header", call(Q), [*HEADERS, ("mcp-method", "tools/call")]),
    ("extra envelope key", {**call(Q), "extra": 1}, HEADERS),
    ("bool id", call(Q, request_id=True), HEADERS),
    (
        "malformed capabilities",
        call(Q, _meta={**META, "io.modelcontextprotocol/clientCapabilities": 3}),
        HEADERS,
    ),
    (
        "tools/list",
        {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"_meta": META}},
        with_header("mcp-method", "tools/list"),
    ),
    ("not JSON", "{not json", HEADERS),
]


def fast_calls(server: McpServer) -> float:
    metrics = httpx.get(server.base_url + "/metrics").text
    found = re.search(r"^mcp_fast_tool_calls_total (\S+)$", metrics, re.M)
    assert found, "the fast path's counter is exported"
    return float(found.group(1))


def answer(
    server: McpServer, body: Any, headers: list[tuple[str, str]]
) -> tuple[int, list[tuple[str, str]], bytes]:
    content = body.encode() if isinstance(body, str) else json.dumps(body).encode()
    response = httpx.post(server.mcp_url, content=content, headers=headers, timeout=30)
    kept = [(k, v) for k, v in response.headers.multi_items() if k not in VARYING]
    return response.status_code, kept, response.content


@pytest.mark.parametrize(("name", "body", "headers"), FAST, ids=[c[0] for c in FAST])
def test_the_fast_path_answers_search_calls_as_the_sdk_does(
    mcp_server: McpServer,
    sdk_server: McpServer,
    name: str,
    body: Any,
    headers: list[tuple[str, str]],
) -> None:
    before = fast_calls(mcp_server)
    fast = answer(mcp_server, body, headers)
    assert fast_calls(mcp_server) == before + 1, "answered by the fast path"
    assert fast == answer(sdk_server, body, headers)
    assert fast[0] == 200 and json.loads(fast[2])["result"]["content"], fast


@pytest.mark.parametrize(("name", "body", "headers"), SDK, ids=[c[0] for c in SDK])
def test_everything_else_goes_to_the_sdk(
    mcp_server: McpServer,
    sdk_server: McpServer,
    name: str,
    body: Any,
    headers: list[tuple[str, str]],
) -> None:
    before = fast_calls(mcp_server)
    fast = answer(mcp_server, body, headers)
    assert fast_calls(mcp_server) == before, "left to the SDK"
    assert fast == answer(sdk_server, body, headers)
    assert fast[0] < 500, fast


async def test_the_sdk_client_gets_the_same_results(
    mcp_server: McpServer, sdk_server: McpServer
) -> None:
    calls: list[dict[str, Any]] = [
        Q,
        {**Q, "include_text": False},
        {"query": "omega-3 and depression", "top_k": 1},
        {"query": ""},
    ]
    results = []
    for server in (mcp_server, sdk_server):
        async with Client(server.mcp_url) as client:
            results.append(
                [(await client.call_tool("search_nfcorpus", a)).model_dump() for a in calls]
            )
    assert results[0] == results[1]
    assert [r["is_error"] for r in results[0]] == [False, False, False, True]
    assert fast_calls(sdk_server) == 0
