"""The purple agent leaves the abstracts out only when the server's tool offers that argument."""

from __future__ import annotations

from typing import Any

import mcp_types

from services.purple_agent.mcp_client import TOOL_NAME, offers_include_text


def _tool(properties: dict[str, Any], name: str = TOOL_NAME) -> mcp_types.Tool:
    return mcp_types.Tool(name=name, input_schema={"type": "object", "properties": properties})


def test_a_tool_with_include_text_gets_it() -> None:
    tools = [_tool({"query": {}, "top_k": {}, "include_text": {"type": "boolean"}})]
    assert offers_include_text(tools)


def test_an_older_server_gets_the_plain_call() -> None:
    # Its strict schema would refuse the unknown argument: every request would fail mid-upgrade.
    assert not offers_include_text([_tool({"query": {}, "top_k": {}})])
    assert not offers_include_text([_tool({"include_text": {}}, name="another_tool")])
    assert not offers_include_text([])
