"""The purple agent leaves the abstracts out only when the server's tool offers that argument."""

from __future__ import annotations

from typing import Any

from services.purple_agent.search.mcp_backend import TOOL_NAME, mirrors_headers, offers_include_text


def _tool(properties: dict[str, Any], name: str = TOOL_NAME) -> dict[str, Any]:
    return {"name": name, "inputSchema": {"type": "object", "properties": properties}}


def test_a_tool_with_include_text_gets_it() -> None:
    tools = [_tool({"query": {}, "top_k": {}, "include_text": {"type": "boolean"}})]
    assert offers_include_text(tools[0])


def test_an_older_server_gets_the_plain_call() -> None:
    # Its strict schema would refuse the unknown argument: every request would fail mid-upgrade.
    assert not offers_include_text(_tool({"query": {}, "top_k": {}}))
    assert not offers_include_text(None)  # the server has no such tool
    assert not offers_include_text({"name": TOOL_NAME, "inputSchema": "not a schema"})


def test_a_tool_mirroring_arguments_into_headers_is_noticed() -> None:
    # Such a server expects Mcp-Param-* headers the plain client does not send: the SDK calls it.
    assert mirrors_headers(_tool({"query": {"type": "string", "x-mcp-header": "Query"}}))
    assert not mirrors_headers(_tool({"query": {"type": "string"}}))
    assert not mirrors_headers(None)
