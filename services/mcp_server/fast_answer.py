"""The SDK's answer to a search tool call, built from the hits directly (:mod:`.fast_call`).

What the SDK sends for a ``tools/call`` at protocol 2026-07-28 is a JSON-RPC response whose
result is the tool's :class:`~mcp_types.CallToolResult` as the protocol's schema dumps it (fields
in the schema's order, ``resultType`` filled in), stamped with the server's identity in
``_meta``, written by ``json.dumps`` with compact separators (ASCII only) and sent as
``application/json``. Around the call it opens the span its OpenTelemetry middleware opens, and
it logs a failed call as its tool manager does. This module does the same, in that order, for the
one tool; ``tests/integration/test_fast_tool_call.py`` compares both answers byte for byte.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from mcp.server._otel import OpenTelemetryMiddleware
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.request_state import RequestStateBoundary
from mcp.shared._otel import extract_trace_context, otel_span
from mcp.shared.inbound import x_mcp_header_map
from mcp_types import SERVER_INFO_META_KEY, JSONRPCResponse
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import ValidationError
from starlette.responses import Response
from starlette.types import Receive, Scope, Send

from services.mcp_server.schemas import response_json
from services.mcp_server.tools import TOOL_NAME, SearchServer, name_invalid_params

METHOD = "tools/call"
#: Where the SDK logs a tool call that failed.
_sdk_log = logging.getLogger("mcp.server.mcpserver.server")


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A ``tools/call`` of the search tool that passed every check the SDK makes."""

    request_id: int | str
    protocol_version: str
    arguments: dict[str, Any]
    meta: Mapping[str, Any] | None


def fast_path_problem(server: SearchServer) -> str | None:
    """What in ``server``'s set-up the fast path would not reproduce, or None.

    It reproduces the server as :mod:`services.mcp_server.app` builds it: the SDK's span and
    request-state middleware plus :func:`name_invalid_params`, no cache hint on ``tools/call``,
    the tool manager's handler unwrapped by extensions, no ``Mcp-Param`` header declared.
    """
    low = server.session_manager.app
    known = (OpenTelemetryMiddleware, RequestStateBoundary)
    if any(not isinstance(m, known) and m is not name_invalid_params for m in low.middleware):
        return "the server has middleware the fast path does not run"
    if METHOD in low.cache_hints:
        return "tools/call has a cache hint"
    entry = low.get_request_handler(METHOD)
    if entry is None or entry.handler != server._handle_call_tool:
        return "the tools/call handler is not the tool manager's own"
    schema = low.get_tool_input_schema(TOOL_NAME) if low.get_tool_input_schema else None
    if schema is None or x_mcp_header_map(schema):
        return "the tool declares Mcp-Param headers"
    return None


async def answer(
    server: SearchServer, call: ToolCall, scope: Scope, receive: Receive, send: Send
) -> None:
    """Search and send the SDK's response to ``call``."""
    attributes: dict[str, Any] = {
        "mcp.method.name": METHOD,
        "mcp.protocol.version": call.protocol_version,
        "jsonrpc.request.id": str(call.request_id),
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": TOOL_NAME,
    }
    with otel_span(
        name=f"{METHOD} {TOOL_NAME}",
        kind=SpanKind.SERVER,
        attributes=attributes,
        context=extract_trace_context(call.meta),
        record_exception=False,
        set_status_on_exception=False,
    ) as span:
        result = await _result(server, call.arguments)
        if result["isError"]:
            span.set_attribute("error.type", "tool_error")
            span.set_status(StatusCode.ERROR)
    result["_meta"] = {SERVER_INFO_META_KEY: server.session_manager.app.server_info_stamp}
    message = {"jsonrpc": "2.0", "id": call.request_id, "result": result}
    try:
        payload = json.dumps(message, separators=(",", ":"), allow_nan=False)
    except ValueError:  # a score that is not finite: the SDK's dump writes it as null
        response = JSONRPCResponse(jsonrpc="2.0", id=call.request_id, result=result)
        dumped = response.model_dump(mode="json", by_alias=True, exclude_none=True)
        payload = json.dumps(dumped, separators=(",", ":"))
    await Response(payload, status_code=200, media_type="application/json")(scope, receive, send)


async def _result(server: SearchServer, arguments: dict[str, Any]) -> dict[str, Any]:
    """The result as the protocol's schema dumps it: hits, or the error the tool manager makes."""
    try:
        hits = await server.search(arguments)
    except Exception as exc:  # as MCPServer._handle_call_tool answers it
        _log_failure(exc)
        return {"content": [_text(str(exc))], "isError": True, "resultType": "complete"}
    return {
        "content": [_text(response_json(hits, indent=2).decode())],
        "isError": False,
        "resultType": "complete",
        "structuredContent": {"results": list(hits)},
    }


def _text(text: str) -> dict[str, Any]:
    return {"text": text, "type": "text"}


def _log_failure(exc: Exception) -> None:
    """The SDK's log line for a failed tool call."""
    if isinstance(exc, ToolError) and not isinstance(exc, UnexpectedToolError):
        if isinstance(exc.__cause__, ValidationError):
            fields = sorted({".".join(str(p) for p in e["loc"]) for e in exc.__cause__.errors()})
            _sdk_log.info("Tool %r rejected arguments: %r", TOOL_NAME, fields)
        else:
            _sdk_log.info("Tool %r failed: %r", TOOL_NAME, str(exc))
    else:
        _sdk_log.exception("Tool %r raised an unexpected exception", TOOL_NAME)
