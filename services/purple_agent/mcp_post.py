"""MCP requests as single HTTP POSTs: a ``Dispatcher`` for the SDK's ``ClientSession``.

The SDK's streamable HTTP transport serves every kind of session: its requests go through memory
streams to a writer task, which starts a task per POST, whose answer goes back through a reader
task that matches it to its caller. For a client that only asks and waits, with the sessionless
protocol of 2026-07-28, a request is one POST and its answer: this dispatcher sends it from the
caller's own task over the shared connection pool. The session above it (stamping the protocol
envelope and headers, validating results) is the SDK's. Each call stands alone: a broken
connection fails that call only, and a cancelled call closes its own connection, which tells the
server its caller has gone.

An answer may come as JSON or as an SSE stream; in a stream only the request's response counts
(the search tool sends no progress, no log and no request of its own).
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Mapping
from typing import Any

import anyio
import httpx2
from mcp.shared.dispatcher import CallOptions, OnNotify, OnNotifyIntercept, OnRequest
from mcp.shared.exceptions import MCPError
from mcp_types import JSONRPCError, JSONRPCMessage, JSONRPCResponse, jsonrpc_message_adapter

from services.purple_agent.mcp_errors import BadAnswer, ServerFailed

ACCEPT = "application/json, text/event-stream"


class PostDispatcher:
    """Sends each request as one POST to ``url`` (see the module docstring)."""

    def __init__(self, url: str, http: httpx2.AsyncClient) -> None:
        self._url = url
        self._http = http
        self._ids = itertools.count(1)

    async def run(
        self,
        on_request: OnRequest,
        on_notify: OnNotify,
        on_notify_intercept: OnNotifyIntercept | None = None,
        *,
        task_status: anyio.abc.TaskStatus[None] = anyio.TASK_STATUS_IGNORED,
    ) -> None:
        """Nothing to receive between requests: wait to be cancelled."""
        task_status.started()
        await anyio.sleep_forever()

    async def notify(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> None:
        """Notifications are not sent (the 2026 HTTP protocol has none from the client)."""

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        """POST the request, return its result.

        Raises:
            MCPError: The server answered with a JSON-RPC error.
            BadAnswer, pydantic.ValidationError: The answer is not the request's response.
            ServerFailed: An HTTP status other than 200 (the pool's response hook raises first
                on an error status).

        """
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        headers = {"accept": ACCEPT, "content-type": "application/json"}
        headers.update((opts or {}).get("headers", {}))
        body = json.dumps(message, separators=(",", ":")).encode()
        async with self._http.stream("POST", self._url, content=body, headers=headers) as response:
            if response.status_code != 200:
                raise ServerFailed(response.status_code, "not a JSON-RPC answer")
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                answer = await _from_stream(response, request_id)
            else:
                answer = _parse(await response.aread())
        if isinstance(answer, JSONRPCError):
            raise MCPError.from_jsonrpc_error(answer)
        if not isinstance(answer, JSONRPCResponse) or answer.id != request_id:
            raise BadAnswer("the answer is not the response to the request")
        return answer.result


def _parse(data: str | bytes) -> JSONRPCMessage:
    return jsonrpc_message_adapter.validate_json(data, by_name=False)


async def _from_stream(response: httpx2.Response, request_id: int) -> JSONRPCMessage:
    async for event in httpx2.EventSource(response):
        if event.event == "message" and event.data:
            message = _parse(event.data)
            if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id == request_id:
                return message
    raise BadAnswer("the event stream ended without the response")
