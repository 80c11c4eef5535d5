"""What the purple agent reads of the search tool: its definition and its results.

Both routes to the server (:mod:`services.purple_agent.mcp_wire` and the SDK's fallback) hand
over the protocol's raw JSON: a tool as ``tools/list`` describes it, a ``tools/call`` result.
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel

from services.purple_agent.mcp_errors import McpCallError
from services.purple_agent.ranking import Candidate

TOOL_NAME = "search_nfcorpus"
#: The tool's optional argument that leaves the abstracts out of the hits.
WITHOUT_TEXT = {"include_text": False}


class SearchOutput(BaseModel):
    """Structured output of the tool."""

    results: list[Candidate]


def offers_include_text(tool: dict[str, Any] | None) -> bool:
    """Whether the search tool offers ``include_text`` (servers before it reject the argument)."""
    schema = (tool or {}).get("inputSchema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return isinstance(properties, dict) and "include_text" in properties


def mirrors_headers(tool: dict[str, Any] | None) -> bool:
    """Whether the tool's input schema asks for arguments mirrored into ``Mcp-Param-*`` headers."""
    return "x-mcp-header" in json.dumps((tool or {}).get("inputSchema"))


def search_output(result: dict[str, Any]) -> SearchOutput:
    """The hits of a raw ``tools/call`` result.

    Raises:
        McpCallError: The tool answered an error (``mcp_tool_error``).
        pydantic.ValidationError: The result holds no well-formed hits.

    """
    if result.get("isError") is True:
        content = result.get("content")
        texts = [
            c["text"]
            for c in (content if isinstance(content, list) else [])
            if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str)
        ]
        raise McpCallError(
            "mcp_tool_error", f"search tool error: {' '.join(texts)}", retryable=False
        )
    return SearchOutput.model_validate(result.get("structuredContent"))
