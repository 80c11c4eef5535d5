"""MCP requests as single HTTP POSTs: a ``Dispatcher`` for the SDK's ``ClientSession``.

The SDK's streamable HTTP transport serves every kind of session: its requests go through memory
streams to a writer task, which starts a task per POST, whose answer goes back through a reader
task that matches it to its caller. For a client that only asks and waits, with the sessionless
protocol of 2026-07-28, a request is one POST and its answer: this dispatcher sends it from the
caller's own task over a pool of keep-alive connections (:mod:`services.purple_agent.http_pool`).
The session above it (stamping the protocol envelope and headers, validating results) is the
SDK's. Each call stands alone: a broken connection fails that call only, and a cancelled call
closes its own connection, which tells the server its caller has gone.

An answer may come as JSON or as an SSE stream; in a stream only the request's response counts
(the search tool sends no progress, no log and no request of its own).
"""

from __future__ import annotations

import codecs
import itertools
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any
from urllib.parse import urlsplit

import anyio
from mcp.shared.dispatcher import CallOptions, OnNotify, OnNotifyIntercept, OnRequest
from mcp.shared.exceptions import MCPError
from mcp_types import JSONRPCError, JSONRPCMessage, JSONRPCResponse, jsonrpc_message_adapter

from services.purple_agent.http_pool import OriginPool, Response
from services.purple_agent.mcp_errors import BadAnswer, ServerFailed, ServerRefused, refused
from services.telemetry.tracing import inject_headers

ACCEPT = (b"accept", b"application/json, text/event-stream")
JSON = (b"content-type", b"application/json")


class PostDispatcher:
    """Sends each request as one POST to ``url`` (see the module docstring)."""

    def __init__(self, url: str, pool: OriginPool, headers: Mapping[str, str]) -> None:
        parsed = urlsplit(url)
        self._target = (parsed.path or "/") + (f"?{parsed.query}" if parsed.query else "")
        self._pool = pool
        self._headers = [ACCEPT, JSON, *((k.encode(), v.encode()) for k, v in headers.items())]
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
            ServerRefused, ServerFailed: An HTTP status other than 200.
            ConnectFailed, ConnectionBroken: The connection could not be opened, or broke.

        """
        request_id = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "method": method}
        if params is not None:
            message["params"] = params
        headers = dict(inject_headers((opts or {}).get("headers")))
        encoded = [*self._headers, *((k.encode(), v.encode()) for k, v in headers.items())]
        body = json.dumps(message, separators=(",", ":")).encode()
        async with self._pool.post(self._target, encoded, body) as response:
            await _check_status(response)
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                answer = await _from_stream(response.chunks(), request_id)
            else:
                answer = jsonrpc_message_adapter.validate_json(await response.read(), by_name=False)
        if isinstance(answer, JSONRPCError):
            raise MCPError.from_jsonrpc_error(answer)
        if not isinstance(answer, JSONRPCResponse) or answer.id != request_id:
            raise BadAnswer("the answer is not the response to the request")
        return answer.result


async def _check_status(response: Response) -> None:
    if response.status == 200:
        return
    if refused(response.status):
        raise ServerRefused(response.status)
    detail = "" if response.status < 400 else (await response.read(200)).decode("utf-8", "replace")
    raise ServerFailed(response.status, detail.strip() or "not a JSON-RPC answer")


async def _from_stream(chunks: AsyncIterator[bytes], request_id: int) -> JSONRPCMessage:
    async for data in _message_events(chunks):
        message = jsonrpc_message_adapter.validate_json(data, by_name=False)
        if isinstance(message, JSONRPCResponse | JSONRPCError) and message.id == request_id:
            return message
    raise BadAnswer("the event stream ended without the response")


async def _message_events(chunks: AsyncIterator[bytes]) -> AsyncIterator[str]:
    """The data of every ``message`` event of an SSE body (fields by line, events by blank line)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    pending, kind, data = "", "message", list[str]()
    async for chunk in chunks:
        *lines, pending = (pending + decoder.decode(chunk)).split("\n")
        for line in (x.removesuffix("\r") for x in lines):
            if not line:
                if data and kind == "message":
                    yield "\n".join(data)
                kind, data = "message", []
            elif line.startswith("data:"):
                data.append(line[5:].removeprefix(" "))
            elif line.startswith("event:"):
                kind = line[6:].strip()
