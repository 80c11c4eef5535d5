"""The green agent's ASGI app: A2A JSON-RPC (1.0 and 0.3) and card at ``/``, in the frame."""

from __future__ import annotations

from a2a.server.tasks import InMemoryTaskStore
from starlette.applications import Starlette

from services.common.a2a import A2A_RPC_PATH
from services.common.a2a_input import message_problem
from services.common.frame import ServiceId, service_app
from services.green_agent.a2a_handler import a2a_routes
from services.green_agent.assessment import AssessmentExecutor
from services.green_agent.card import build_card
from services.green_agent.settings import GreenSettings

SERVICE = ServiceId(metric_prefix="green", trace_name="green-agent")


def create_app(settings: GreenSettings) -> Starlette:
    """Build the evaluator's app; the test set is read on the first assessment."""
    card = build_card(settings.public_url)
    routes = a2a_routes(card, AssessmentExecutor(settings), InMemoryTaskStore())
    checks = {A2A_RPC_PATH: message_problem}
    return service_app(SERVICE, routes, jsonrpc_paths=[A2A_RPC_PATH], body_checks=checks)
