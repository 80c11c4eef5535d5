"""The MCP server holds the clauses the MCP conformance suite found it breaking, on both wires.

2025-11-25 is the wire of the initialize handshake; 2026-07-28 is stateless, each request
carrying its version, capabilities and client in ``_meta`` and its method (and tool name) in
``Mcp-Method`` / ``Mcp-Name`` headers. Requests are written out by hand, as the suite writes
them, so each test shows the wire it checks.
"""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from harness.processes import McpServer
from tests.support.raw_http import post_as_written

INVALID_PARAMS = -32602
LEGACY, STATELESS = "2025-11-25", "2026-07-28"
CLIENT = {"name": "clause-test", "version": "1.0"}


def _request(
    wire: str, method: str, params: dict[str, Any]
) -> tuple[dict[str, str], dict[str, Any]]:
    """Headers and JSON-RPC body of ``method`` as a client of ``wire`` sends it."""
    headers = {
        "content-type": "application/json",
        "accept": "application/json, text/event-stream",
        "mcp-protocol-version": wire,
    }
    if wire == STATELESS:
        headers["mcp-method"] = method
        if "name" in params:
            headers["mcp-name"] = params["name"]
        meta = {
            "io.modelcontextprotocol/protocolVersion": wire,
            "io.modelcontextprotocol/clientCapabilities": {},
            "io.modelcontextprotocol/clientInfo": CLIENT,
        }
        params = {**params, "_meta": meta}
    return headers, {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}


def _call(server: McpServer, wire: str, method: str, params: dict[str, Any]) -> dict[str, Any]:
    headers, body = _request(wire, method, params)
    response = httpx.post(server.mcp_url, headers=headers, json=body, timeout=30)
    answer: dict[str, Any] = response.json()
    return answer


@pytest.mark.parametrize("wire", [LEGACY, STATELESS])
def test_an_unknown_tool_is_a_protocol_error(mcp_server: McpServer, wire: str) -> None:
    """Tools specification, error handling: an unknown tool is a protocol error (-32602), not a
    tool result flagged ``isError`` (which reads as the tool having run and failed)."""
    params = {"name": "search_pubmed", "arguments": {"query": "soy"}}
    answer = _call(mcp_server, wire, "tools/call", params)
    assert "result" not in answer, answer
    assert answer["error"]["code"] == INVALID_PARAMS
    assert answer["error"]["message"] == "Unknown tool: search_pubmed"
    known = _call(mcp_server, wire, "tools/call", {**params, "name": "search_nfcorpus"})
    assert known["result"]["structuredContent"]["results"], "the search tool still answers"


@pytest.mark.parametrize("wire", [LEGACY, STATELESS])
def test_an_unknown_prompt_is_a_protocol_error(mcp_server: McpServer, wire: str) -> None:
    """Prompts specification, error handling: an invalid prompt name is -32602 on both wires
    (the SDK answered code 0 on one and -32603 on the other)."""
    answer = _call(mcp_server, wire, "prompts/get", {"name": "summarise"})
    assert answer["error"]["code"] == INVALID_PARAMS
    assert answer["error"]["message"] == "Unknown prompt: summarise"


def test_initialize_and_discover_advertise_the_same_capabilities(mcp_server: McpServer) -> None:
    """Lifecycle (2025-11-25 ``initialize``) and discovery (2026-07-28 ``server/discover``)
    declare one set of capabilities: nothing here changes while it runs, so no ``listChanged``
    and no resource ``subscribe`` on either wire, and no listen stream to hold open."""
    handshake = {"protocolVersion": LEGACY, "capabilities": {}, "clientInfo": CLIENT}
    initialized = _call(mcp_server, LEGACY, "initialize", handshake)["result"]
    discovered = _call(mcp_server, STATELESS, "server/discover", {})["result"]
    assert discovered["capabilities"] == initialized["capabilities"]
    flags = [
        value
        for capability in initialized["capabilities"].values()
        for key, value in capability.items()
        if key in ("listChanged", "subscribe")
    ]
    assert flags and not any(flags)
    listen = _call(mcp_server, STATELESS, "subscriptions/listen", {"notifications": {}})
    assert listen["error"]["code"] == -32601  # method not found: nothing is ever announced


@pytest.mark.parametrize("space", [" ", "\t", " \t "])
def test_header_values_are_read_without_surrounding_whitespace(
    mcp_server: McpServer, space: str
) -> None:
    """RFC 9110 section 5.5: a field value excludes leading and trailing whitespace, so
    ``Mcp-Name: search_nfcorpus `` names the body's tool (it was refused with -32020)."""
    headers, body = _request(
        STATELESS, "tools/call", {"name": "search_nfcorpus", "arguments": {"query": "soy"}}
    )
    headers["mcp-name"] = space + headers["mcp-name"] + space
    headers["mcp-method"] += space
    status, answer = post_as_written(mcp_server.mcp_url, body, headers)
    assert status == 200, answer
    assert answer["result"]["structuredContent"]["results"]
    headers = {name: value.strip() for name, value in headers.items()}
    headers["mcp-name"] = "search_nfcorpus2"
    mismatch = httpx.post(mcp_server.mcp_url, headers=headers, json=body, timeout=30)
    assert mismatch.status_code == 400 and mismatch.json()["error"]["code"] == -32020
