"""Plain HTTP routes: REST search and the AgentBeats stats API (the frame adds health/metrics)."""

from __future__ import annotations

import json

from mcp.server.transport_security import TransportSecurityMiddleware, TransportSecuritySettings
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from services.mcp_server.schemas import InvalidSearch, response_json, validate_search
from services.mcp_server.service import SearchService, SearchUnavailableError


def _invalid(detail: list[dict[str, str]]) -> JSONResponse:
    return JSONResponse({"error": "invalid request", "detail": detail}, status_code=422)


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
            hits = await service.search(
                parsed.query, parsed.top_k, via="rest", include_text=parsed.include_text
            )
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

    return [
        Route("/search_nfcorpus", search, methods=["POST"]),
        Route("/health_check", health_check, methods=["POST", "GET"]),
        Route("/stats", stats, methods=["GET"]),
        Route("/stats/reset", stats_reset, methods=["POST"]),
    ]
