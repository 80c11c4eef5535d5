"""A2A plumbing both our agents compose: the card's parts, its routes, and JSON-RPC around a handler.

Each agent brings its own request handler: the purple agent answers at once
(:mod:`services.purple_agent.a2a.handler`), the green agent runs long assessments on the SDK's
(:mod:`services.green_agent.assessment.handler`).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from a2a.compat.v0_3.conversions import to_compat_agent_card
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
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0, VERSION_HEADER
from google.protobuf.json_format import MessageToDict  # type: ignore[import-untyped]  # no stubs
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

ORGANIZATION = "nfcorpus-retrieval"
#: Where the card is served: the root (AgentBeats), the current and the 0.3 well-known paths.
CARD_PATHS = ("/", "/.well-known/agent-card.json", "/.well-known/agent.json")
#: Where JSON-RPC (1.0 and 0.3) is served.
A2A_RPC_PATH = "/"
#: How the card may be cached (A2A 8.6.1). Public: it is served to anyone, with authentication on
#: too, and says the same to every caller. Five minutes: it changes only when the agent is
#: redeployed with other settings, and a client holding it revalidates it for a 304 by its ETag.
CARD_CACHE_CONTROL = "public, max-age=300"


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


def card_variants(card: AgentCard) -> tuple[dict[str, Any], dict[str, Any]]:
    """``card`` as A2A 1.0 clients read it, and as clients that name no version (0.3) read it.

    The 1.0 card is the protobuf card's JSON, nothing else: each security scheme a oneof of one
    kind (A2A 4.5.1). The other is what the SDK serves to everyone: the 1.0 card with the 0.3
    card's fields merged in (``url``, ``preferredTransport``, ``protocolVersion``, ``security``),
    what a2a-sdk 0.3 clients and 1.x clients both read, except that each security scheme is the
    0.3 card's (``type``, ``scheme``) where the SDK's merge leaves both shapes in one object.
    """
    current = MessageToDict(card)
    compat = agent_card_to_dict(card)
    if card.security_schemes:
        legacy = to_compat_agent_card(card).model_dump(exclude_none=True, by_alias=True)
        compat["securitySchemes"] = legacy["securitySchemes"]
    return current, compat


def _asks_for_1_0(request: Request) -> bool:
    """Whether the request names A2A 1.x: the header, or the query parameter (A2A 3.6.1)."""
    version = request.headers.get(VERSION_HEADER)
    if version is None and request.scope["query_string"]:
        version = request.query_params.get(VERSION_HEADER)
    # A2A 3.6.2: no version is 0.3.
    return version is not None and version.strip().split(".")[0] == "1"


def card_routes(card: AgentCard) -> list[BaseRoute]:
    """``GET`` of the card at every :data:`CARD_PATHS`, rendered once per A2A version.

    A request naming A2A 1.x (``A2A-Version``) gets the 1.0 card; any other the card a 0.3
    client reads (:func:`card_variants`): an empty version is 0.3 (A2A 3.6.2), and a 0.3 client
    reads the card at the same well-known path as a 1.0 one. ``Vary: A2A-Version`` keeps caches
    from mixing them. Each has the SDK's weak ETag over its sorted JSON (304 when
    ``If-None-Match`` names it) and :data:`CARD_CACHE_CONTROL`. The SDK's card route converts and
    renders the card on every request, a cost per query, since a 0.3 green agent fetches the
    card before every query; our cards do not change while the process runs.
    """
    current, compat = card_variants(card)
    variants = {True: _Rendered(current), False: _Rendered(compat)}  # by: asks for 1.0

    async def serve_card(request: Request) -> Response:
        card = variants[_asks_for_1_0(request)]
        wanted = [tag.strip() for tag in request.headers.get("if-none-match", "").split(",")]
        if "*" in wanted or card.etag.removeprefix("W/") in (t.removeprefix("W/") for t in wanted):
            return _Prebuilt(b"", 304, card.not_modified)
        return _Prebuilt(card.body, 200, card.ok)

    return [Route(path, serve_card, methods=["GET"]) for path in CARD_PATHS]


class _Rendered:
    """One version of the card as served: its bytes, its ETag and each answer's headers."""

    def __init__(self, card: dict[str, Any]) -> None:
        # The SDK's ETag: weak, over the sorted JSON of the card without its signatures.
        unsigned = {k: v for k, v in card.items() if k != "signatures"}
        sorted_json = json.dumps(unsigned, sort_keys=True, separators=(",", ":")).encode()
        self.etag = f'W/"{hashlib.sha256(sorted_json).hexdigest()}"'
        self.body = json.dumps(card, ensure_ascii=False, separators=(",", ":")).encode()
        headers = {"ETag": self.etag, "Cache-Control": CARD_CACHE_CONTROL, "Vary": VERSION_HEADER}
        self.ok = Response(self.body, media_type="application/json", headers=headers).raw_headers
        self.not_modified = Response(status_code=304, headers=headers).raw_headers


class _Prebuilt(Response):
    """A response whose headers were encoded once, at start: the card never changes."""

    def __init__(
        self, body: bytes, status_code: int, raw_headers: list[tuple[bytes, bytes]]
    ) -> None:
        self.status_code = status_code
        self.background = None
        self.body = body
        self.raw_headers = list(raw_headers)  # a list of its own: middleware may add to it
