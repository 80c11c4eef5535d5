"""The purple agent's MCP requests as plain JSON-RPC POSTs (protocol 2026-07-28), without the SDK.

Under the sessionless protocol of 2026-07-28 a request is one POST and its answer: a JSON-RPC
request whose ``params._meta`` carries the protocol version, the client's identity and its
capabilities, with the version and the method (and a tool's name) repeated in headers. That is
all the agent has to say: ``server/discover`` and ``tools/list`` once, then one ``tools/call``
per query. The MCP SDK (``mcp`` and its protocol models ``mcp_types``) would cost every agent
process about 43 MB and each call a typed session's validation; it stays for the servers this
client does not speak to (:mod:`._sdk_fallback`, imported only then).
``tests/integration/test_purple_mcp_wire.py`` checks these requests against the SDK client's.

Each call stands alone: a broken connection fails that call only, and a cancelled call closes
its own connection, which tells the server its caller has gone. An answer may come as JSON or as
an SSE stream; in a stream only the request's response counts (the search tool sends no
progress, no log and no request of its own).
"""

from __future__ import annotations

import codecs
import itertools
import json
from collections.abc import AsyncIterator, Mapping
from typing import Any, Protocol

from services.purple_agent.search._errors import BadAnswer, RpcError, http_failure, refused
from services.purple_agent.search._pool import OriginPool, Response, request_target
from services.telemetry.tracing import inject_headers

#: The one protocol version of the sessionless era this client speaks (the SDK's too, for now).
PROTOCOL_VERSION = "2026-07-28"
_VERSION_KEY = "io.modelcontextprotocol/protocolVersion"
_CLIENT_INFO_KEY = "io.modelcontextprotocol/clientInfo"
_CAPABILITIES_KEY = "io.modelcontextprotocol/clientCapabilities"
#: How the agent names itself in every request's ``_meta``.
CLIENT_INFO = {"name": "nfcorpus-purple-agent", "version": "1.0.0"}
#: Pages of ``tools/list`` read at most (a server paging without end cannot hold us).
MAX_TOOL_PAGES = 50
_STATIC_HEADERS = [
    (b"accept", b"application/json, text/event-stream"),
    (b"content-type", b"application/json"),
]


class ToolRoute(Protocol):
    """How the client reaches the server's tools: this module, or the SDK's fallback."""

    async def tool(self, name: str) -> dict[str, Any] | None:
        """The tool's definition as ``tools/list`` gives it, or None if the server has none."""
        ...

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The raw ``tools/call`` result (``content``, ``isError``, ``structuredContent``)."""
        ...


class McpWire:
    """Sends each request to ``url`` as one POST over ``pool`` (see the module docstring)."""

    def __init__(self, url: str, pool: OriginPool, headers: Mapping[str, str]) -> None:
        self._target = request_target(url)
        self._pool = pool
        self._headers = [
            *_STATIC_HEADERS,
            (b"mcp-protocol-version", PROTOCOL_VERSION.encode()),
            *((k.lower().encode(), v.encode()) for k, v in headers.items()),
        ]
        self._ids = itertools.count(1)

    async def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """POST one request, return its result.

        Raises:
            RpcError: The server answered with a JSON-RPC error.
            BadAnswer: The answer is not the request's response.
            ServerRefused, ServerFailed: An HTTP status other than 200.
            ConnectFailed, ConnectionBroken: The connection could not be opened, or broke.

        """
        request_id = next(self._ids)
        meta = {
            _VERSION_KEY: PROTOCOL_VERSION,
            _CLIENT_INFO_KEY: CLIENT_INFO,
            _CAPABILITIES_KEY: {},
        }
        trace = inject_headers()  # W3C trace context, in the headers and (SEP-414) in ``_meta``
        stamped = {**(params or {}), "_meta": {**meta, **trace}}
        message = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": stamped}
        headers = [*self._headers, (b"mcp-method", method.encode())]
        if method == "tools/call":
            headers.append((b"mcp-name", str(stamped["name"]).encode()))
        headers += [(k.encode(), v.encode()) for k, v in trace.items()]
        body = json.dumps(message, separators=(",", ":")).encode()
        async with self._pool.post(self._target, headers, body) as response:
            await _check_status(response)
            if response.headers.get("content-type", "").startswith("text/event-stream"):
                answer = await _from_stream(response.chunks(), request_id)
            else:
                answer = _response_to(await response.read(), request_id)
        if answer is None:
            raise BadAnswer("the answer is not the response to the request")
        return _result_of(answer)

    async def discover(self) -> dict[str, Any] | None:
        """The server's ``server/discover`` result, or None when it does not speak our version.

        A JSON-RPC error (a handshake-era server does not know the method, or names other
        versions) or a result without our version is the SDK's case; HTTP and connection
        failures are raised, as they say nothing about the protocol.
        """
        try:
            result = await self.request("server/discover")
        except RpcError:
            return None
        supported = result.get("supportedVersions")
        return result if isinstance(supported, list) and PROTOCOL_VERSION in supported else None

    async def tool(self, name: str) -> dict[str, Any] | None:
        """The tool ``name`` as ``tools/list`` describes it, or None."""
        cursor: str | None = None
        for _ in range(MAX_TOOL_PAGES):
            page = await self.request("tools/list", {"cursor": cursor} if cursor else None)
            tools = page.get("tools")
            if not isinstance(tools, list):
                raise BadAnswer("tools/list answered no list of tools")
            for tool in tools:
                if isinstance(tool, dict) and tool.get("name") == name:
                    return tool
            cursor = page.get("nextCursor")
            if not isinstance(cursor, str) or not cursor:
                return None
        return None

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The raw result of one ``tools/call``."""
        return await self.request("tools/call", {"name": name, "arguments": dict(arguments)})


def _response_to(data: str | bytes, request_id: int) -> dict[str, Any] | None:
    """The JSON-RPC response (result or error) to ``request_id`` in ``data``, or None."""
    try:
        message = json.loads(data)
    except ValueError as e:  # UnicodeDecodeError and JSONDecodeError alike
        raise BadAnswer(f"the answer is not JSON ({e})") from e
    if (
        isinstance(message, dict)
        and message.get("jsonrpc") == "2.0"
        and message.get("id") == request_id
        and ("result" in message) != ("error" in message)
    ):
        return message
    return None


def _result_of(answer: dict[str, Any]) -> dict[str, Any]:
    """The result of a response, or the :class:`RpcError` it holds."""
    if "error" in answer:
        error = answer["error"]
        if not isinstance(error, dict) or not isinstance(error.get("code"), int):
            raise BadAnswer("the answer holds a malformed JSON-RPC error")
        raise RpcError(error["code"], str(error.get("message", "")), error.get("data"))
    result = answer["result"]
    if not isinstance(result, dict):
        raise BadAnswer("the answer's result is not an object")
    return result


async def _check_status(response: Response) -> None:
    if response.status == 200:
        return
    failed = response.status >= 400 and not refused(response.status)
    detail = (await response.read(200)).decode("utf-8", "replace") if failed else ""
    raise http_failure(response.status, detail)


async def _from_stream(chunks: AsyncIterator[bytes], request_id: int) -> dict[str, Any] | None:
    async for data in _message_events(chunks):
        answer = _response_to(data, request_id)
        if answer is not None:
            return answer
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
