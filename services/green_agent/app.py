"""The green agent's ASGI app: A2A JSON-RPC (1.0 and 0.3) and card at ``/``, ``/healthz``."""

from __future__ import annotations

from pathlib import Path

from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from services.green_agent.card import build_card
from services.green_agent.server import AssessmentExecutor
from services.green_agent.settings import GreenSettings
from services.telemetry.tracing import setup_tracing

CARD_PATHS = ("/", "/.well-known/agent-card.json", "/.well-known/agent.json")


async def _healthz(_: Request) -> Response:
    return JSONResponse({"status": "ok"})


def create_app(settings: GreenSettings, data_dir: Path) -> Starlette:
    """Build the evaluator's app; the test set is read on the first assessment."""
    setup_tracing("green-agent")
    card = build_card(settings.public_url)
    handler = DefaultRequestHandler(
        agent_executor=AssessmentExecutor(settings, data_dir),
        task_store=InMemoryTaskStore(),
        agent_card=card,
    )
    routes = [r for path in CARD_PATHS for r in create_agent_card_routes(card, card_url=path)]
    routes += create_jsonrpc_routes(handler, rpc_url="/", enable_v0_3_compat=True)
    routes.append(Route("/healthz", _healthz, methods=["GET"]))
    return Starlette(routes=routes)
