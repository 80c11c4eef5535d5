"""The purple agent's ASGI app: A2A JSON-RPC and agent card at ``/``, health and metrics.

Routes: ``POST /`` (JSON-RPC 1.0 and 0.3), ``GET /``, ``/.well-known/agent-card.json`` and
``/.well-known/agent.json`` (card), ``GET /healthz`` (process alive), ``GET /readyz`` (MCP server
reachable), ``GET /metrics`` (Prometheus).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from opentelemetry import context as otel_context
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from services.purple_agent.agent import RetrievalAgent
from services.purple_agent.agent_executor import RetrievalExecutor
from services.purple_agent.card import build_card
from services.purple_agent.mcp_client import McpSearchClient
from services.purple_agent.ranking import ServerOrder
from services.purple_agent.settings import MAX_TOP_K, PurpleSettings
from services.purple_agent.task_store import BoundedTaskStore
from services.telemetry.metrics import metrics_endpoint
from services.telemetry.tracing import extract_context, setup_tracing

CARD_PATHS = ("/", "/.well-known/agent-card.json", "/.well-known/agent.json")
# A probe every few seconds from each kubelet should not become an MCP request each time.
READINESS_CACHE_S = 1.0
# HTTP clients log every request at INFO: one line per MCP call is noise at hundreds per second.
QUIET_LOGGERS = ("httpx", "httpx2", "mcp.client")


class TraceContextMiddleware:
    """Parents this request's spans on the caller's W3C trace context (``traceparent``)."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Attach the incoming context for the duration of the request."""
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        token = otel_context.attach(extract_context(headers))
        try:
            await self.app(scope, receive, send)
        finally:
            otel_context.detach(token)


class _Readiness:
    def __init__(self, mcp: McpSearchClient, settings: PurpleSettings) -> None:
        self._mcp = mcp
        self._settings = settings
        self._checked_at = -READINESS_CACHE_S
        self._last: tuple[bool, str] = (False, "not checked")

    async def endpoint(self, _: Request) -> Response:
        """200 when the MCP server answers its health check, else 503 with the reason."""
        if time.monotonic() - self._checked_at >= READINESS_CACHE_S:
            self._last = await self._mcp.ready(
                self._settings.health_url, self._settings.readiness_timeout_s
            )
            self._checked_at = time.monotonic()
        ready, detail = self._last
        body = {"status": "ready" if ready else "not ready", "mcp": detail}
        return JSONResponse(body, status_code=200 if ready else 503)


async def _healthz(_: Request) -> Response:
    return JSONResponse({"status": "ok"})


def create_app(settings: PurpleSettings) -> Starlette:
    """Build the app from settings; the MCP connection pool opens on first use."""
    setup_tracing("purple-agent")
    for name in QUIET_LOGGERS:
        logging.getLogger(name).setLevel(logging.WARNING)
    card = build_card(settings)
    mcp = McpSearchClient(
        settings.mcp_url,
        timeout_s=settings.mcp_timeout_s,
        retries=settings.mcp_retries,
        backoff_s=settings.mcp_backoff_s,
        max_connections=settings.mcp_max_connections,
    )
    agent = RetrievalAgent(mcp, ServerOrder(settings.candidates, MAX_TOP_K), settings.deadline_s)
    handler = DefaultRequestHandler(
        agent_executor=RetrievalExecutor(agent),
        task_store=BoundedTaskStore(settings.max_tasks),
        agent_card=card,
    )
    card_routes = [r for path in CARD_PATHS for r in create_agent_card_routes(card, card_url=path)]
    routes = [
        *card_routes,
        *create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True),
        Route("/healthz", _healthz, methods=["GET"]),
        Route("/readyz", _Readiness(mcp, settings).endpoint, methods=["GET"]),
        Route("/metrics", metrics_endpoint, methods=["GET"]),
    ]

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        yield
        await mcp.aclose()

    app = Starlette(routes=routes, lifespan=lifespan)
    app.add_middleware(TraceContextMiddleware)
    app.state.settings = settings
    app.state.mcp = mcp
    return app
