"""A2A plumbing both our agents compose: the card's parts, its routes, and JSON-RPC around a handler.

Each agent brings its own request handler: the purple agent answers at once
(:mod:`services.purple_agent.a2a.handler`), the green agent runs long assessments on the SDK's
(:mod:`services.green_agent.assessment.handler`).
"""

from __future__ import annotations

import hashlib
import json

from a2a.server.request_handlers import RequestHandler
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import create_jsonrpc_routes
from a2a.types import (
    AgentCard,
    AgentInterface,
    AgentProvider,
    SecurityRequirement,
    StringList,
)
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

ORGANIZATION = "nfcorpus-retrieval"
#: Where the card is served: the root (AgentBeats), the current and the 0.3 well-known paths.
CARD_PATHS = ("/", "/.well-known/agent-card.json", "/.well-known/agent.json")
#: Where JSON-RPC (1.0 and 0.3) is served.
A2A_RPC_PATH = "/"


def jsonrpc_interfaces(url: str) -> list[AgentInterface]:
    """JSON-RPC at ``url`` in A2A 1.0 and 0.3.

    The 0.3 interface is what makes the served card carry the legacy ``url``,
    ``preferredTransport`` and ``protocolVersion`` fields an a2a-sdk 0.3 client requires.
    """
    return [
        AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION_1_0),
        AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION_0_3),
    ]


def require_bearer(card: AgentCard) -> AgentCard:
    """Declare on ``card`` that requests need ``Authorization: Bearer <token>``."""
    scheme = card.security_schemes["bearer"].http_auth_security_scheme
    scheme.scheme = "bearer"
    scheme.description = "A token issued by the operator of this agent."
    card.security_requirements.append(SecurityRequirement(schemes={"bearer": StringList()}))
    return card


def provider(url: str) -> AgentProvider:
    """Who runs the agent."""
    return AgentProvider(organization=ORGANIZATION, url=url)


def handler_routes(card: AgentCard, handler: RequestHandler) -> list[BaseRoute]:
    """The card at every :data:`CARD_PATHS` and ``handler`` behind JSON-RPC 1.0 and 0.3."""
    jsonrpc = create_jsonrpc_routes(handler, rpc_url=A2A_RPC_PATH, enable_v0_3_compat=True)
    return [*card_routes(card), *jsonrpc]


def card_routes(card: AgentCard) -> list[BaseRoute]:
    """``GET`` of the card at every :data:`CARD_PATHS`, rendered once.

    The same bytes and ETag as the SDK's card route (the 1.0 card with the 0.3 fields merged in,
    a weak ETag over its sorted JSON, 304 when ``If-None-Match`` names it), but that route
    converts and renders the card on every request, a cost per query, since a 0.3 green
    agent fetches the card before every query. Our cards do not change while the process runs.
    """
    rendered = agent_card_to_dict(card)
    unsigned = {k: v for k, v in rendered.items() if k != "signatures"}
    digest = hashlib.sha256(json.dumps(unsigned, sort_keys=True, separators=(",", ":")).encode())
    etag = f'W/"{digest.hexdigest()}"'
    body = json.dumps(rendered, ensure_ascii=False, separators=(",", ":")).encode()

    async def serve_card(request: Request) -> Response:
        wanted = [tag.strip() for tag in request.headers.get("if-none-match", "").split(",")]
        if "*" in wanted or etag.removeprefix("W/") in (t.removeprefix("W/") for t in wanted):
            return Response(status_code=304, headers={"ETag": etag})
        return Response(body, media_type="application/json", headers={"ETag": etag})

    return [Route(path, serve_card, methods=["GET"]) for path in CARD_PATHS]
