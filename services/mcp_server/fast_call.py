"""The one hot MCP request, answered without the SDK's dispatch: a sessionless search tool call.

Every query of the purple agent is a ``tools/call`` of ``search_nfcorpus`` POSTed to ``/mcp`` with
protocol 2026-07-28 and a JSON answer accepted. The SDK serves it through its session manager,
a per-request runner, a context, a middleware chain, a second validation of the result against
the protocol's schema and two dumps of it: about two thirds of the event loop's time per query.
:class:`FastToolCall` answers that request itself, with byte for byte the JSON-RPC response the
SDK would send (:mod:`services.mcp_server.fast_answer` builds it), and the SDK's span.

It is an answer for the well-formed case only. The request passes every check the SDK makes,
made by the SDK's own functions where they are pure (the envelope, the per-request protocol
ladder, the params of ``tools/call``), or it goes to the SDK untouched: other methods, other
tools, other protocol versions, event streams, notifications, odd headers, and every request
the SDK would refuse. Both paths run inside the service frame, so authentication, limits,
metrics, logging and tracing apply to them alike.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from mcp.shared.inbound import (
    MCP_PARAM_HEADER_PREFIX,
    MCP_PROTOCOL_VERSION_HEADER,
    InboundModernRoute,
    classify_inbound_request,
    find_duplicated_routing_header,
)
from mcp_types import JSONRPCRequest, RequestParams
from mcp_types import methods as protocol_methods
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic import BaseModel, ValidationError
from starlette.requests import Request
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.mcp_server.fast_answer import ToolCall, answer, fast_path_problem
from services.mcp_server.metrics import FAST_TOOL_CALLS
from services.mcp_server.tools import TOOL_NAME, SearchServer

log = logging.getLogger(__name__)
METHOD = "tools/call"
_PARAM_PREFIX = MCP_PARAM_HEADER_PREFIX.lower()
_ENVELOPE_KEYS = frozenset({"jsonrpc", "id", "method", "params"})


class FastToolCall:
    """ASGI app in front of the SDK's: answers the hot tool call, passes everything else on."""

    def __init__(
        self,
        sdk_app: ASGIApp,
        server: SearchServer,
        security: TransportSecuritySettings,
        *,
        path: str,
        enabled: bool = True,
    ) -> None:
        """Serve ``POST path`` tool calls of ``server``'s search tool; the rest goes to ``sdk_app``.

        The fast path stays off when ``enabled`` is false, or when ``server`` is configured in a
        way it does not reproduce (:func:`~services.mcp_server.fast_answer.fast_path_problem`).
        """
        self._sdk = sdk_app
        self._server = server
        self._security = security
        self._path = path
        entry = server.session_manager.app.get_request_handler(METHOD)
        self._params_type: type[BaseModel] | None = entry.params_type if entry else None
        problem = fast_path_problem(server)
        if enabled and problem is not None:
            log.warning("every tools/call goes to the MCP SDK: %s", problem)
        self.enabled = enabled and problem is None

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Answer one request, or hand it to the SDK with its body replayed."""
        if (
            not self.enabled
            or scope["type"] != "http"
            or scope["method"] != "POST"
            or scope["path"] != self._path
        ):
            await self._sdk(scope, receive, send)
            return
        messages = await _read_body(receive)
        complete = messages[-1]["type"] == "http.request"  # not a disconnect mid-body
        body = b"".join(m.get("body", b"") for m in messages)
        call = self._hot_call(scope, body) if complete else None
        if call is None:
            await self._sdk(scope, _replay(messages, receive), send)
            return
        FAST_TOOL_CALLS.inc()
        await answer(self._server, call, scope, receive, send)

    def _hot_call(self, scope: Scope, body: bytes) -> ToolCall | None:
        """The request as a search tool call the SDK would dispatch, or None (the SDK's case)."""
        request = Request(scope)
        headers = request.headers
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
        if version not in MODERN_PROTOCOL_VERSIONS or len(body) > DEFAULT_MAX_REQUEST_BODY_SIZE:
            return None
        if not self._headers_pass(request) or any(k.startswith(_PARAM_PREFIX) for k in headers):
            return None
        has_json, _ = check_accept_headers(request)
        if not has_json or find_duplicated_routing_header(headers.items()) is not None:
            return None
        try:
            decoded = json.loads(body)
        except (ValueError, RecursionError):
            return None
        if not isinstance(decoded, dict) or decoded.keys() != _ENVELOPE_KEYS:
            return None
        try:
            envelope = JSONRPCRequest.model_validate(decoded)
        except ValidationError:
            return None
        params = envelope.params
        if envelope.method != METHOD or params is None or not _is_search(params):
            return None
        route = classify_inbound_request(decoded, headers=dict(headers))
        if not isinstance(route, InboundModernRoute) or not self._params_pass(route, params):
            return None
        return ToolCall(envelope.id, route.protocol_version, params["arguments"], _meta(params))

    def _headers_pass(self, request: Request) -> bool:
        """The SDK's Content-Type, Host and Origin checks (it answers a failure itself)."""
        content_type = request.headers.get("content-type")
        if content_type is None or not content_type.lower().startswith("application/json"):
            return False
        if not self._security.enable_dns_rebinding_protection:
            return True
        host, origin = request.headers.get("host"), request.headers.get("origin")
        if not host or not _allowed(host, self._security.allowed_hosts):
            return False
        return not origin or _allowed(origin, self._security.allowed_origins)

    def _params_pass(self, route: InboundModernRoute, params: dict[str, Any]) -> bool:
        """The protocol's schema of ``tools/call`` params at the version, and the SDK's model."""
        assert self._params_type is not None
        try:
            protocol_methods.validate_client_request(METHOD, route.protocol_version, params)
            self._params_type.model_validate(params, by_name=False)
        except (ValidationError, KeyError, ValueError):
            return False
        return True


def _is_search(params: Mapping[str, Any]) -> bool:
    """A call of the search tool with an arguments object and no multi-round state."""
    return (
        params.get("name") == TOOL_NAME
        and isinstance(params.get("arguments"), dict)
        and "requestState" not in params
    )


def _allowed(value: str, allowed: list[str]) -> bool:
    """The SDK's Host / Origin match: exact, or ``base:*`` for any port."""
    return value in allowed or any(
        a.endswith(":*") and value.startswith(a[:-2] + ":") for a in allowed
    )


def _meta(params: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``params._meta`` as the SDK's runner reads it (the span's parent may be in it)."""
    try:
        meta = RequestParams.model_validate(params, by_name=False).meta
    except ValidationError:
        return None
    return meta


async def _read_body(receive: Receive) -> list[Message]:
    """The body's messages up to the last one, or up to the first that is not body."""
    messages: list[Message] = []
    while True:
        message = await receive()
        messages.append(message)
        if message["type"] != "http.request" or not message.get("more_body", False):
            return messages


def _replay(messages: list[Message], receive: Receive) -> Receive:
    """``receive`` with the messages read so far given back first, as they came."""
    queue = list(messages)

    async def replayed() -> Message:
        return queue.pop(0) if queue else await receive()

    return replayed
