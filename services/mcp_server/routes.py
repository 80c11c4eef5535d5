"""Plain HTTP routes: REST search, the AgentBeats stats API and a self-description at ``/``.

(The frame adds health and metrics.)
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from services.mcp_server.schemas import InvalidSearch, response_json, validate_search
from services.mcp_server.service import SearchService, SearchUnavailableError


def _invalid(detail: list[dict[str, str]]) -> JSONResponse:
    return JSONResponse({"error": "invalid request", "detail": detail}, status_code=422)


Endpoint = Callable[[Request], Awaitable[Response]]
#: What a route takes in, to answer the methods it does not serve itself.
EVERY_METHOD = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def _route(path: str, endpoint: Endpoint, methods: list[str]) -> Route:
    """``endpoint`` at ``path`` for ``methods``; any other method gets 405 with ``Allow``.

    A route limited to its methods would let the catch-all MCP mount answer the others with 404,
    which tells a client the path does not exist.
    """
    allowed = [*methods, "HEAD"] if "GET" in methods else methods
    allow = ", ".join(allowed)

    async def dispatch(request: Request) -> Response:
        if request.method in allowed:
            return await endpoint(request)
        message = f"{request.method} is not allowed on {path}: use {allow}"
        return JSONResponse({"error": message}, status_code=405, headers={"allow": allow})

    return Route(path, dispatch, methods=EVERY_METHOD)


def _description() -> dict[str, Any]:
    """What ``GET /`` says of the server (the seed's server describes itself there too)."""
    return {
        "name": "nfcorpus-retrieval MCP server",
        "description": "Search over NFCorpus (BEIR): MCP at /mcp and the same search as REST.",
        "tools": [
            {
                "name": "search_nfcorpus",
                "arguments": {"query": "string", "top_k": "1..100 (default 5)"},
                "returns": {"results": [{"doc_id": "", "score": 0.0, "title": "", "text": ""}]},
            }
        ],
        "endpoints": {
            "POST /mcp": "MCP streamable HTTP (stateless, JSON answers)",
            "POST /search_nfcorpus": 'REST: {"query", "top_k", "include_text"}',
            "POST /health_check": "qdrant_calls_total (the AgentBeats evaluator reads it)",
            "GET /stats, POST /stats/reset": "search_call_count",
            "GET /healthz, /readyz, /metrics": "liveness, readiness, Prometheus",
        },
    }


def rest_routes(service: SearchService, security: TransportSecuritySettings) -> list[BaseRoute]:
    """Every non-MCP route of the server.

    The state-changing one (``POST /stats/reset``) checks Host and Origin as ``/mcp`` does
    (``security``), so a web page cannot reset the evaluator's counter (421 or 403).
    """
    same_site = TransportSecurityMiddleware(security)

    async def search(request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _invalid([{"field": "body", "message": "body must be a JSON object"}])
        try:
            parsed = validate_search(body)
        except InvalidSearch as e:
            return _invalid(e.detail)
        try:
            hits = await service.search(parsed, via="rest")
        except SearchUnavailableError as e:
            return JSONResponse({"error": str(e)}, status_code=503)
        return Response(response_json(hits), media_type="application/json")

    async def health_check(_: Request) -> Response:
        return JSONResponse({"status": "ok", "qdrant_calls_total": service.store_calls})

    async def stats(_: Request) -> Response:
        return JSONResponse({"search_call_count": service.search_calls})

    async def stats_reset(request: Request) -> Response:
        refused = await same_site.validate_request(request)
        if refused is not None:
            return refused
        service.reset_stats()
        return JSONResponse({"status": "reset", "search_call_count": 0})

    async def describe(_: Request) -> Response:
        return JSONResponse(_description())

    return [
        _route("/", describe, ["GET"]),
        _route("/search_nfcorpus", search, ["POST"]),
        _route("/health_check", health_check, ["POST", "GET"]),
        _route("/stats", stats, ["GET"]),
        _route("/stats/reset", stats_reset, ["POST"]),
    ]
