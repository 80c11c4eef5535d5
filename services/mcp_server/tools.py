"""The MCP tool ``search_nfcorpus``, validated exactly as ``POST /search_nfcorpus`` is."""

from __future__ import annotations

from typing import Any

import mcp_types
from mcp.server import MCPServer
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError

from services.common.validation import describe
from services.mcp_server.schemas import (
    IncludeText,
    InvalidSearch,
    QueryText,
    SearchHits,
    SearchRequest,
    SearchResponse,
    TopK,
    response_json,
    validate_search,
)
from services.mcp_server.service import SearchService, SearchUnavailableError

TOOL_NAME = "search_nfcorpus"
DESCRIPTION = """Search NFCorpus, a collection of 3,633 PubMed articles (titles and abstracts) on
nutrition and medicine, for the documents most relevant to a question.

Use it for evidence on foods, nutrients, diets, supplements and their links to diseases or health
outcomes. Pass the question in plain words (short queries such as 'green tea and prostate cancer'
work well); set top_k to how many documents you need. Returns `results`, best first, each with
`doc_id` (e.g. 'MED-10'), a relevance `score` (higher is better; compare within one call only),
`title` and `text` (the abstract; set include_text to false when you need only the ids, scores
and titles). The ranking combines semantic (MiniLM) and keyword (BM25) matching."""


class SearchServer(MCPServer):
    """An MCP server whose search tool takes only what the REST endpoint takes, answered directly.

    The SDK validates tool arguments leniently (``"5"``, ``5.0`` and ``true`` pass as a top_k)
    and reports failures as a pydantic dump that echoes the input; the arguments go through
    :func:`~services.mcp_server.schemas.validate_search` instead, whose messages name each
    field and what is wrong with it. That strict validation is the tool's whole contract, so
    :meth:`call_tool` then answers the tool itself: the SDK's second validation of the
    arguments, its call through the function's signature, and its re-validation and dump of
    the returned model against the output schema would only redo work on hits our own index
    produced. The registered function publishes the schemas and gives the same answer.
    """

    def __init__(self, service: SearchService, **kwargs: Any) -> None:
        """An MCP server (``kwargs`` as :class:`MCPServer` takes them) with the search tool.

        ``subscriptions/listen`` is not served: nothing here ever changes while it runs, so a
        listen stream would only hold a connection open with nothing to say. That also makes
        ``server/discover`` advertise what ``initialize`` does (no ``listChanged``, no
        ``subscribe``): the SDK derives those flags from the listen handler on the new wire.
        """
        super().__init__(subscriptions=False, **kwargs)
        self._service = service

        @self.tool(name=TOOL_NAME, title="Search NFCorpus", description=DESCRIPTION)
        async def search_nfcorpus(
            query: QueryText, top_k: TopK = 5, include_text: IncludeText = True
        ) -> SearchResponse:
            request = SearchRequest(query=query, top_k=top_k, include_text=include_text)
            hits = await self._search(request)
            return SearchResponse.model_validate({"results": hits})

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> mcp_types.CallToolResult | mcp_types.InputRequiredResult:
        """Answer the search tool (strictly validated); any other name is a protocol error.

        The SDK answers an unknown name with a tool result flagged ``isError``, which a model
        reads as the tool having run and failed; the tools specification (error handling) lists
        unknown tools among the protocol errors, -32602, so a client can tell the two apart.
        """
        if name != TOOL_NAME:
            raise unknown("tool", name)
        return tool_result(await self.search(arguments))

    async def get_prompt(
        self,
        name: str,
        arguments: dict[str, Any] | None = None,
        context: Context[Any, Any] | None = None,
    ) -> mcp_types.GetPromptResult | mcp_types.InputRequiredResult:
        """A prompt by name; a name not served is -32602, as the prompts specification says.

        The SDK raises a plain error for it, answered with code 0 on one wire and -32603 on the
        other.
        """
        if name not in {prompt.name for prompt in await self.list_prompts()}:
            raise unknown("prompt", name)
        return await super().get_prompt(name, arguments, context)

    async def search(self, arguments: dict[str, Any]) -> SearchHits:
        """The search tool's hits for ``arguments``; :class:`ToolError` says what went wrong."""
        try:
            request = validate_search(arguments)
        except InvalidSearch as e:
            raise ToolError(f"invalid arguments: {e}") from None
        return await self._search(request)

    async def _search(self, request: SearchRequest) -> SearchHits:
        try:
            return await self._service.search(request, via="tool")
        except SearchUnavailableError as e:
            # The SDK's own wording for a tool that raised ToolError: a client that reads it sees
            # the same message whichever path answered.
            raise ToolError(f"Error executing tool {TOOL_NAME}: {e}") from e


def unknown(kind: str, name: str) -> MCPError:
    """The protocol error for a name this server does not serve (invalid params, -32602)."""
    return MCPError(
        code=mcp_types.INVALID_PARAMS, message=f"Unknown {kind}: {name}", data={"name": name}
    )


def tool_result(hits: SearchHits) -> mcp_types.CallToolResult:
    """What the SDK makes of a returned :class:`SearchResponse`, built from the hits directly.

    Structured content ``{"results": [...]}`` and, for clients that read only text, the same
    object as indented JSON in one text block.
    """
    text = response_json(hits, indent=2).decode()
    return mcp_types.CallToolResult(
        content=[mcp_types.TextContent(type="text", text=text)],
        structured_content={"results": list(hits)},
    )


async def name_invalid_params(
    ctx: ServerRequestContext[Any, Any], call_next: CallNext
) -> HandlerResult:
    """Server middleware: name what is wrong with params that fail the protocol's schema.

    The SDK answers every such request with "Invalid request parameters" and no detail.
    """
    try:
        return await call_next(ctx)
    except ValidationError as e:
        message = f"invalid params of {ctx.method}: {describe(e)}"
        raise MCPError(code=mcp_types.INVALID_PARAMS, message=message) from None
