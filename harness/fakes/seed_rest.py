"""A search server that speaks only the seed's REST wire, written from its description.

The public NFCorpus evaluator's "MCP server" (``http://mcp-server:8000``) serves
``POST /search_nfcorpus`` ``{"query", "top_k"=5}`` answering ``{"results": [{doc_id, score,
title, text}], "qdrant_calls": 1}`` (text cut at 2,000 characters plus "..."), reports any failure
as an HTTP **200** ``{"error": "...", "results": []}``, answers ``POST /health_check`` and
``GET /`` with JSON, and has no ``/mcp``. Unknown fields are ignored and a body without
``query`` is a 422, as its web framework does. Where its hits come from is the test's choice:
``search`` is any coroutine (a fixed list, or our own server's REST search for real rankings).
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Any

import httpx
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

Search = Callable[[str, int], Awaitable[list[dict[str, Any]]]]
TEXT_CHARS = 2000


def _cut(text: str) -> str:
    return text if len(text) <= TEXT_CHARS else text[:TEXT_CHARS] + "..."


def seed_rest_app(search: Search) -> Starlette:
    """The seed's REST-only server around ``search``; ``app.state.calls`` counts searches."""
    state: dict[str, int] = {"calls": 0}

    async def search_route(request: Request) -> JSONResponse:
        try:
            body = json.loads(await request.body())
        except ValueError:
            return JSONResponse({"detail": "body is not JSON"}, status_code=422)
        if not isinstance(body, dict) or not isinstance(body.get("query"), str):
            return JSONResponse({"detail": [{"loc": ["body", "query"]}]}, status_code=422)
        top_k = body.get("top_k", 5)
        try:
            hits = await search(body["query"], int(top_k))
        except Exception as e:  # the seed's server reports every failure this way
            return JSONResponse({"error": f"Search failed: {e}", "results": []})
        state["calls"] += 1
        results = [{**hit, "text": _cut(str(hit.get("text", "")))} for hit in hits]
        return JSONResponse({"results": results, "qdrant_calls": 1})

    async def health_check(_: Request) -> JSONResponse:
        return JSONResponse(
            {
                "status": "healthy",
                "qdrant_url": "http://qdrant:6333",
                "collection": "nfcorpus",
                "points_count": 3633,
                "available_collections": ["nfcorpus"],
                "qdrant_calls_total": state["calls"],
            }
        )

    async def describe(_: Request) -> JSONResponse:
        return JSONResponse({"name": "NFCorpus MCP server", "tools": ["search_nfcorpus"]})

    app = Starlette(
        routes=[
            Route("/", describe, methods=["GET"]),
            Route("/search_nfcorpus", search_route, methods=["POST"]),
            Route("/health_check", health_check, methods=["POST"]),
        ]
    )
    app.state.calls = state
    return app


def forwarding_to(base_url: str) -> Search:
    """A search that asks our own server's REST route: the seed's wire over real rankings."""

    async def search(query: str, top_k: int) -> list[dict[str, Any]]:
        async with httpx.AsyncClient(base_url=base_url, timeout=30) as client:
            answer = await client.post("/search_nfcorpus", json={"query": query, "top_k": top_k})
            answer.raise_for_status()
            hits: list[dict[str, Any]] = answer.json()["results"]
            return hits

    return search


def fixed_hits(hits: list[dict[str, Any]]) -> Search:
    """A search answering ``hits`` (cut to ``top_k``) whatever the query; "boom" fails."""

    async def search(query: str, top_k: int) -> list[dict[str, Any]]:
        if query == "boom":
            raise RuntimeError("Qdrant is unreachable")
        return hits[:top_k]

    return search
