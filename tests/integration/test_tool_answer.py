"""The search tool answers itself, as the MCP SDK would have answered for it.

:class:`SearchServer` skips the SDK's argument re-validation, function call and output-schema
validation for its own tool; the answer must not change for it: the same structured content,
the same indented JSON text, errors worded as the SDK words them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import jsonschema  # type: ignore[import-untyped]  # no stubs; comes with the MCP SDK
import mcp_types
import pytest
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError

from services.mcp_server.service import SearchService
from services.mcp_server.tools import TOOL_NAME, SearchServer
from services.retrieval.query.pipeline import RankingPipeline
from services.retrieval.store import open_store
from services.retrieval.store.counting import CountingStore
from tests.support.small_index import SmallIndex


@pytest.fixture(scope="module")
def server(small_index: SmallIndex, encoder: Any) -> Iterator[SearchServer]:
    settings = small_index.settings.updated(store={"edge_private_copy": True})
    store = CountingStore(open_store(settings.store))
    try:
        service = SearchService(RankingPipeline(store, encoder, settings), store, threads=1)
        yield SearchServer(service, name="test")
    finally:
        store.close()


@pytest.mark.parametrize(
    "arguments",
    [
        {"query": "vitamin D and bone fractures", "top_k": 5},
        {"query": "green tea", "top_k": 3, "include_text": False},
        {"query": "statins and muscle pain"},
    ],
)
async def test_the_tool_answers_as_the_sdk_would(
    server: SearchServer, arguments: dict[str, Any]
) -> None:
    ours = await server.call_tool(TOOL_NAME, arguments)
    # The SDK's own path: validate, call the registered function, convert and check its model.
    sdk = await MCPServer.call_tool(server, TOOL_NAME, arguments)
    assert isinstance(ours, mcp_types.CallToolResult) and isinstance(sdk, mcp_types.CallToolResult)
    assert ours.model_dump(mode="json") == sdk.model_dump(mode="json")
    assert ours.structured_content and ours.structured_content["results"]
    (tool,) = await server.list_tools()
    assert tool.output_schema is not None
    jsonschema.validate(ours.structured_content, tool.output_schema)


async def test_bad_arguments_are_named_before_any_search(server: SearchServer) -> None:
    with pytest.raises(ToolError, match=r"^invalid arguments: top_k: Input should be a valid"):
        await server.call_tool(TOOL_NAME, {"query": "x", "top_k": "5"})


async def test_other_names_are_a_protocol_error(server: SearchServer) -> None:
    with pytest.raises(MCPError, match="Unknown tool: search_pubmed") as raised:
        await server.call_tool("search_pubmed", {"query": "x"})
    assert raised.value.error.code == mcp_types.INVALID_PARAMS
