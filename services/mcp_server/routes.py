"""Plain HTTP routes: REST search, health, readiness, metrics and the AgentBeats stats API."""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable

from mcp.server import MCPServer
from pydantic import ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from services.mcp_server.schemas import SearchRequest, SearchResponse
from services.mcp_server.service import SearchService, SearchUnavailableError
from services.telemetry.metrics import metrics_endpoint


def _invalid(detail: list[dict[str, str]]) -> JSONResponse:
    return JSONResponse({"error": "invalid request", "detail": detail}, status_code=422)


def _describe(e: ValidationError) -> list[dict[str, str]]:
    return [
        {"field": ".".join(str(p) for p in err["loc"]) or "body", "message": err["msg"]}
        for err in e.errors(include_url=False)
    ]


Handler = Callable[[Request], Awaitable[Response]]


def _route(mcp: MCPServer, path: str, methods: list[str]) -> Callable[[Handler], Handler]:
    """``mcp.custom_route`` with its type spelled out (the SDK's decorator is untyped)."""
    decorator: Callable[[Handler], Handler] = mcp.custom_route(path, methods=methods)
    return decorator


def register_routes(mcp: MCPServer, service: SearchService) -> None:
    """Add every non-MCP route to ``mcp``'s Starlette app."""

    @_route(mcp, "/search_nfcorpus", ["POST"])
    async def search(request: Request) -> Response:
        try:
            body = json.loads(await request.body())
        except (json.JSONDecodeError, UnicodeDecodeError):
            return _invalid([{"field": "body", "message": "body must be a JSON object"}])
        if not isinstance(body, dict):
            return _invalid([{"field": "body", "message": "body must be a JSON object"}])
        try:
            parsed = SearchRequest.model_validate(body)
        except ValidationError as e:
            return _invalid(_describe(e))
        try:
            hits = await service.search(parsed.query, parsed.top_k, via="rest")
        except SearchUnavailableError as e:
            return JSONResponse({"error": str(e)}, status_code=503)
        return JSONResponse(SearchResponse(results=hits).model_dump())

    @_route(mcp, "/healthz", ["GET"])
    async def healthz(_: Request) -> Response:
        return JSONResponse({"status": "ok"})

    @_route(mcp, "/readyz", ["GET"])
    async def readyz(_: Request) -> Response:
        ready, reason = await service.ready()
        body = {"status": "ready" if ready else "not ready", "reason": reason}
        return JSONResponse(body, status_code=200 if ready else 503)

    @_route(mcp, "/health_check", ["POST", "GET"])
    async def health_check(_: Request) -> Response:
        return JSONResponse({"status": "ok", "qdrant_calls_total": service.store_calls})

    @_route(mcp, "/stats", ["GET"])
    async def stats(_: Request) -> Response:
        return JSONResponse({"search_call_count": service.search_calls})

    @_route(mcp, "/stats/reset", ["POST"])
    async def stats_reset(_: Request) -> Response:
        service.reset_stats()
        return JSONResponse({"status": "reset", "search_call_count": 0})

    _route(mcp, "/metrics", ["GET"])(metrics_endpoint)
