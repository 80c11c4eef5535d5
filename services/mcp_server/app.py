"""Builds the MCP server's ASGI app: MCP at ``/mcp`` plus the plain HTTP routes."""

from __future__ import annotations

from mcp.server import MCPServer
from mcp.server.transport_security import TransportSecuritySettings
from starlette.types import ASGIApp

from services.mcp_server.metrics import REQUEST_SECONDS
from services.mcp_server.routes import register_routes
from services.mcp_server.service import SearchService
from services.mcp_server.settings import McpServerSettings
from services.mcp_server.tools import register_tools
from services.retrieval.dense import OnnxMiniLM
from services.retrieval.pipeline import RankingPipeline
from services.retrieval.settings import RetrievalSettings
from services.retrieval.store import open_store
from services.telemetry.http import RequestTelemetry
from services.telemetry.tracing import setup_tracing

ROUTES = ("/mcp", "/search_nfcorpus", "/healthz", "/readyz", "/metrics", "/health_check", "/stats")
INSTRUCTIONS = (
    "Retrieval over NFCorpus (PubMed nutrition/medicine abstracts): call search_nfcorpus."
)


def transport_security(allowed_hosts: list[str]) -> TransportSecuritySettings:
    """Host-header check for the MCP endpoint; ``*`` switches it off deliberately."""
    if "*" in allowed_hosts:
        return TransportSecuritySettings(enable_dns_rebinding_protection=False)
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=allowed_hosts,
        allowed_origins=[f"http://{h}" for h in allowed_hosts]
        + [f"https://{h}" for h in allowed_hosts],
    )


def create_app(
    settings: McpServerSettings | None = None, retrieval: RetrievalSettings | None = None
) -> ASGIApp:
    """Open store and model, then wire tool, routes and telemetry into one ASGI app."""
    settings = settings or McpServerSettings()
    retrieval = retrieval or RetrievalSettings()
    setup_tracing("nfcorpus-mcp-server")
    store = open_store(retrieval)
    searcher = RankingPipeline(store, OnnxMiniLM(threads=retrieval.encode_threads), retrieval)
    service = SearchService(searcher, store, settings.search_threads, settings.ready_cache_s)

    mcp = MCPServer(name="nfcorpus-retrieval", version="0.1.0", instructions=INSTRUCTIONS)
    register_tools(mcp, service)
    register_routes(mcp, service)
    app = mcp.streamable_http_app(
        streamable_http_path="/mcp",
        stateless_http=True,
        json_response=True,
        transport_security=transport_security(settings.allowed_hosts),
    )
    return RequestTelemetry(app, REQUEST_SECONDS, ROUTES)
