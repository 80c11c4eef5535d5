"""Plain HTTP routes: REST search, the AgentBeats stats API and a self-description at ``/``.

Each checks Host and Origin as ``/mcp`` does, with the same setting (:func:`rest_routes`). The
frame adds health and metrics, unchecked: see :func:`rest_routes` for why.
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

SEARCH_PATH = "/search_nfcorpus"
#: The routes whose posts must be JSON; the request guard refuses any other type with 415.
JSON_PATHS = (SEARCH_PATH,)


def _invalid(detail: list[dict[str, str]]) -> JSONResponse:
    return JSONResponse({"error": "invalid request", "detail": detail}, status_code=422)


Endpoint = Callable[[Request], Awaitable[Response]]
#: What a route takes in, to answer the methods it does not serve itself.
EVERY_METHOD = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


def _route(
    path: str, endpoint: Endpoint, methods: list[str], same_site: TransportSecurityMiddleware
) -> Route:
    """``endpoint`` at ``path`` for ``methods``; any other method gets 405 with ``Allow``.

    A request of another site (its Host or Origin not allowed by ``same_site``) gets the MCP
    SDK's own refusal first, whatever its method: 421 for the Host, 403 for the Origin.
    A route limited to its methods would let the catch-all MCP mount answer the others with 404,
    which tells a client the path does not exist.
    """
    allowed = [*methods, "HEAD"] if "GET" in methods else methods
    allow = ", ".join(allowed)

    async def dispatch(request: Request) -> Response:
        refused = await same_site.validate_request(request)
        if refused is not None:
            return refused
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
    """Every non-MCP route of the server, each checking Host and Origin as ``/mcp`` does.

    A page a visitor opens in a browser can reach a server the visitor can reach (on loopback,
    behind a firewall): by a cross-site request, whose ``Origin`` names the page, or by DNS
    rebinding, where the page's own name turns to the server's address and its requests carry
    a foreign ``Host``. ``security`` is the setting ``/mcp`` is checked with
    (``MCP_ALLOWED_HOSTS``); the MCP SDK's check refuses both on every route here, so a page
    can neither search on the visitor's behalf, read the counters nor reset the evaluator's
    count. ``POST /search_nfcorpus`` also takes only ``Content-Type: application/json`` (415
    otherwise, from the request guard: :data:`JSON_PATHS`): a page's form or ``text/plain`` post
    needs no CORS preflight, a JSON one does.

    The frame's ``/healthz``, ``/readyz`` and ``/metrics`` are left unchecked on purpose: the
    kubelet and Prometheus address a pod by its IP, which no allow-list can name ahead of time,
    so a Host check would fail every probe and scrape; and they only read, holding no query or
    document, so a page that reads them learns the server's health and counters at most. Nor
    are ``GET /mcp`` (a fixed 405) and unknown paths (404): they answer nothing to read.
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
        _route("/", describe, ["GET"], same_site),
        _route(SEARCH_PATH, search, ["POST"], same_site),
        _route("/health_check", health_check, ["POST", "GET"], same_site),
        _route("/stats", stats, ["GET"], same_site),
        _route("/stats/reset", stats_reset, ["POST"], same_site),
    ]
