"""The MCP tool ``search_nfcorpus``."""

from __future__ import annotations

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError

from services.mcp_server.schemas import QueryText, SearchResponse, TopK, check_not_blank
from services.mcp_server.service import SearchService, SearchUnavailableError

DESCRIPTION = """Search NFCorpus, a collection of 3,633 PubMed articles (titles and abstracts) on
nutrition and medicine, for the documents most relevant to a question.

Use it for evidence on foods, nutrients, diets, supplements and their links to diseases or health
outcomes. Pass the question in plain words (short queries such as 'green tea and prostate cancer'
work well); set top_k to how many documents you need. Returns `results`, best first, each with
`doc_id` (e.g. 'MED-10'), a relevance `score` (higher is better; compare within one call only),
`title` and `text` (the abstract). The ranking combines semantic (MiniLM) and keyword (BM25)
matching."""


def register_tools(mcp: MCPServer, service: SearchService) -> None:
    """Add the search tool to ``mcp``."""

    @mcp.tool(name="search_nfcorpus", title="Search NFCorpus", description=DESCRIPTION)
    async def search_nfcorpus(query: QueryText, top_k: TopK = 5) -> SearchResponse:
        try:
            check_not_blank(query)
            hits = await service.search(query, top_k, via="tool")
        except (ValueError, SearchUnavailableError) as e:
            raise ToolError(str(e)) from e
        return SearchResponse(results=hits)
