"""What the purple agent reads of the MCP search tool: its definition and its results.

Both MCP routes to the server (:mod:`._mcp_wire` and the SDK's fallback) hand over the
protocol's raw JSON: a tool as ``tools/list`` describes it, a ``tools/call`` result.
"""

from __future__ import annotations

import json
from typing import Any

from services.purple_agent.search._errors import BadAnswer, ToolFailed
from services.purple_agent.search._hits import Hits, read_hits

TOOL_NAME = "search_nfcorpus"
#: The tool's optional argument that leaves the abstracts out of the hits.
WITHOUT_TEXT = {"include_text": False}


def offers_include_text(tool: dict[str, Any] | None) -> bool:
    """Whether the search tool offers ``include_text`` (servers before it reject the argument)."""
    schema = (tool or {}).get("inputSchema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return isinstance(properties, dict) and "include_text" in properties


def mirrors_headers(tool: dict[str, Any] | None) -> bool:
    """Whether the tool's input schema asks for arguments mirrored into ``Mcp-Param-*`` headers."""
    return "x-mcp-header" in json.dumps((tool or {}).get("inputSchema"))


def _texts(result: dict[str, Any]) -> list[str]:
    content = result.get("content")
    return [
        c["text"]
        for c in (content if isinstance(content, list) else [])
        if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str)
    ]


def tool_hits(result: dict[str, Any]) -> Hits:
    """The hits of a raw ``tools/call`` result.

    The structured output when there is one; a server that returns its JSON only as text
    content (tools without an output schema do) is read from that text.

    Raises:
        ToolFailed: The tool answered an error.
        BadAnswer: The result holds no readable hits.

    """
    if result.get("isError") is True:
        raise ToolFailed(" ".join(_texts(result)) or "no message")
    structured = result.get("structuredContent")
    if structured is None:
        try:
            structured = json.loads("".join(_texts(result)))
        except ValueError:
            raise BadAnswer("the tool result has no structured content and no JSON text") from None
    return read_hits(structured)
