"""Plain HTTP routes: REST search, the AgentBeats stats API and a self-description at ``/``.

The frame checks Host and Origin, methods and bodies on each, as on ``/mcp``, and adds health and
metrics.
"""

from __future__ import annotations

import json
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from services.mcp_server.schemas import InvalidSearch, response_json, validate_search
from services.mcp_server.service import SearchService, SearchUnavailableError

SEARCH_PATH = "/search_nfcorpus"
#: The routes whose posts must be JSON; the request guard refuses any other type with 415.
JSON_PATHS = (SEARCH_PATH,)


def _invalid(detail: list[dict[str, str]]) -> JSONResponse:
    return JSONResponse({"error": "invalid request", "detail": detail}, status_code=422)


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


def rest_routes(service: SearchService) -> list[BaseRoute]:
    """Every non-MCP route of the server.

    The frame checks Host and Origin on each, as on ``/mcp``, against ``MCP_ALLOWED_HOSTS``
    (:mod:`services.common.guard.hosts`): a page a visitor opens can neither search on the
    visitor's behalf, read the counters nor reset the evaluator's count. It answers a method a
    route does not serve with 405 before the MCP mount could read a body
    (:mod:`services.common.guard.methods`). ``POST /search_nfcorpus`` also takes only
    ``Content-Type: application/json`` (415 otherwise: :data:`JSON_PATHS`): a page's form or
    ``text/plain`` post needs no CORS preflight, a JSON one does.
    """

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

    # POST /health_check and POST /stats/reset read no body, so any Content-Type (or none, as
    # a caller posting nothing sends) is taken: the Host and Origin check keeps pages away.
    async def health_check(_: Request) -> Response:
        return JSONResponse({"status": "ok", "qdrant_calls_total": service.store_calls})

    async def stats(_: Request) -> Response:
        return JSONResponse({"search_call_count": service.search_calls})

    async def stats_reset(_: Request) -> Response:
        service.reset_stats()
        return JSONResponse({"status": "reset", "search_call_count": 0})

    async def describe(_: Request) -> Response:
        return JSONResponse(_description())

    return [
        Route("/", describe, methods=["GET"]),
        Route(SEARCH_PATH, search, methods=["POST"]),
        Route("/health_check", health_check, methods=["POST", "GET"]),
        Route("/stats", stats, methods=["GET"]),
        Route("/stats/reset", stats_reset, methods=["POST"]),
    ]
