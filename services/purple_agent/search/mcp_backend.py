"""The MCP backend: the sessionless protocol spoken by our own client, else the SDK's session.

**The probe** asks ``server/discover`` (2026-07-28); a JSON-RPC error there is a handshake-era
server, reached through the MCP SDK (:mod:`.sdk_fallback`, imported only then), as is a tool
whose arguments must be mirrored into headers. The tool must be there (``tools/list``), and the
agent asks for hits without their abstracts when the tool offers ``include_text``: the ranking
policy reads ids and scores only.

**Our own client** (:class:`McpWire`) sends the agent's MCP requests as plain JSON-RPC POSTs.
Under the sessionless protocol of 2026-07-28 a request is one POST and its answer: a JSON-RPC
request whose ``params._meta`` carries the protocol version, the client's identity and its
capabilities, with the version and the method (and a tool's name) repeated in headers. That is
all the agent has to say: ``server/discover`` and ``tools/list`` once, then one ``tools/call``
per query. The MCP SDK (``mcp`` and its protocol models ``mcp_types``) would cost every agent
process the memory of its modules and each call a typed session's validation (the figures are in
``docs/performance.md``); it stays for the servers this client does not speak to.
``tests/integration/test_purple_mcp_wire.py`` checks these requests against the SDK client's.

Each call stands alone: a broken connection fails that call only, and a cancelled call closes
its own connection, which tells the server its caller has gone. An answer may come as JSON or as
an SSE stream; in a stream only the request's response counts (the search tool sends no
progress, no log and no request of its own).

**The tool's answer.** Both routes to the server (:class:`McpWire` and the SDK's fallback) hand
over the protocol's raw JSON: a tool as ``tools/list`` describes it, a ``tools/call`` result,
read here (:func:`read_tool_result`) into the answer every backend hands over
(:func:`.backend.read_answer`).
"""

from __future__ import annotations

import codecs
import itertools
import json
import logging
from collections.abc import AsyncIterator, Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol
from urllib.parse import urljoin

from services.common import jsonrpc
from services.common.http_pool import (
    ConnectFailed,
    ConnectionBroken,
    OriginPool,
    Response,
    request_target,
)
from services.purple_agent.search.backend import (
    BadAnswer,
    NotSpoken,
    SearchAnswer,
    ServerFailed,
    ToolFailed,
    http_failure,
    not_here,
    read_answer,
    refused,
)
from services.telemetry.tracing import inject_headers

if TYPE_CHECKING:  # imported when a server needs it (it loads the MCP SDK)
    from services.purple_agent.search.sdk_fallback import SdkFallback

log = logging.getLogger(__name__)

TOOL_NAME = "search_nfcorpus"
#: The tool's optional argument that leaves the abstracts out of the hits.
WITHOUT_TEXT = {"include_text": False}
#: Makes (or hands back) the SDK's route to an endpoint.
FallbackFactory = Callable[[str], "SdkFallback"]

#: The one protocol version of the sessionless era this client speaks.
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
    """How the client reaches the server's tools: :class:`McpWire`, or the SDK's fallback."""

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
            RpcError: The server answered with a JSON-RPC error (:mod:`services.common.jsonrpc`).
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
        message = jsonrpc.request(method, stamped, request_id)
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
        except jsonrpc.RpcError:
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
    return jsonrpc.response_to(message, request_id)


def _result_of(answer: dict[str, Any]) -> dict[str, Any]:
    """The result of a response, or the :class:`~services.common.jsonrpc.RpcError` it holds."""
    try:
        result = jsonrpc.result_or_error(answer)
    except jsonrpc.MalformedResponse as e:
        raise BadAnswer(str(e)) from None
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


def offers_include_text(tool: dict[str, Any] | None) -> bool:
    """Whether the search tool offers ``include_text`` (servers without it reject the argument)."""
    schema = (tool or {}).get("inputSchema")
    properties = schema.get("properties") if isinstance(schema, dict) else None
    return isinstance(properties, dict) and "include_text" in properties


def mirrors_headers(tool: dict[str, Any] | None) -> bool:
    """Whether the tool's input schema asks for arguments mirrored into ``Mcp-Param-*`` headers."""
    return "x-mcp-header" in json.dumps((tool or {}).get("inputSchema"))


def _texts(result: dict[str, Any]) -> list[str]:
    content = result.get("content")
    return [
        c["text"]
        for c in (content if isinstance(content, list) else [])
        if isinstance(c, dict) and c.get("type") == "text" and isinstance(c.get("text"), str)
    ]


def read_tool_result(result: dict[str, Any]) -> SearchAnswer:
    """The hits of a raw ``tools/call`` result.

    The structured output when there is one; a server that returns its JSON only as text
    content (tools without an output schema do) is read from that text.

    Raises:
        ToolFailed: The tool answered an error.
        BadAnswer: The result holds no readable hits.

    """
    if result.get("isError") is True:
        raise ToolFailed(" ".join(_texts(result)) or "no message")
    structured = result.get("structuredContent")
    if structured is None:
        try:
            structured = json.loads("".join(_texts(result)))
        except ValueError:
            raise BadAnswer("the tool result has no structured content and no JSON text") from None
    return read_answer(structured)


class McpBackend:
    """Calls the tool over ``route``; ready while the server's ``healthz`` (or protocol) answers."""

    def __init__(
        self,
        url: str,
        route: ToolRoute,
        *,
        kind: str,
        arguments: Mapping[str, Any],
        pool: OriginPool,
    ) -> None:
        self.url = url
        self.kind = kind
        self._route = route
        self._arguments = dict(arguments)
        self._pool = pool
        self._health = urljoin(url, "healthz")
        self._has_health = True  # until the server says it has no such route

    async def search(self, query: str, top_k: int) -> SearchAnswer:
        """One ``tools/call``."""
        arguments = {"query": query, "top_k": top_k, **self._arguments}
        return read_tool_result(await self._route.call_tool(TOOL_NAME, arguments))

    async def ready(self) -> tuple[bool, str]:
        """The server's ``healthz`` beside the endpoint (ours has one), else the tool's listing."""
        try:
            if self._has_health:
                async with self._pool.request("GET", request_target(self._health), []) as answer:
                    await answer.read()
                if answer.status == 200:
                    return True, f"{self.kind} at {self.url}"
                if not not_here(answer.status):
                    return False, f"MCP server health {self._health} answered {answer.status}"
                self._has_health = False
            found = await self._route.tool(TOOL_NAME) is not None
        except (ConnectFailed, ConnectionBroken) as e:
            return False, f"MCP server unreachable at {self.url}: {type(e).__name__}"
        except Exception as e:  # any failure of the protocol probe: not ready, and why
            return False, f"MCP server at {self.url} failed its probe: {type(e).__name__}: {e}"
        return (
            found,
            f"{self.kind} at {self.url}" if found else f"no tool {TOOL_NAME} at {self.url}",
        )


def _refusal(error: ServerFailed, url: str) -> NotSpoken:
    return NotSpoken(f"POST {url} answered HTTP {error.status}")


async def probe_mcp(
    url: str, pool: OriginPool, headers: Mapping[str, str], fallback: FallbackFactory
) -> McpBackend:
    """The MCP backend at ``url``.

    Raises:
        NotSpoken: ``url`` is no MCP endpoint, or its server has no search tool.
        ConnectFailed, ServerRefused, ServerFailed: the server could not be asked.

    """
    wire = McpWire(url, pool, headers)
    try:
        modern = await wire.discover() is not None
        tool = await wire.tool(TOOL_NAME) if modern else None
    except ServerFailed as e:
        if not_here(e.status):
            raise _refusal(e, url) from None
        raise
    except BadAnswer as e:
        raise NotSpoken(f"POST {url} is not JSON-RPC ({e})") from None
    route: ToolRoute = wire
    kind = "mcp"
    if not modern or mirrors_headers(tool):
        route = sdk = fallback(url)
        try:
            tool = await sdk.tool(TOOL_NAME)
        except ServerFailed as e:
            if not_here(e.status):
                raise _refusal(e, url) from None
            raise
        sdk.list_first = mirrors_headers(tool)
        kind = "mcp_sdk"
    if tool is None:
        raise NotSpoken(f"the MCP server at {url} has no tool {TOOL_NAME}")
    era = f"protocol {PROTOCOL_VERSION}" if kind == "mcp" else "the MCP SDK"
    log.info("search backend: MCP at %s, through %s", url, era)
    arguments = WITHOUT_TEXT if offers_include_text(tool) else {}
    return McpBackend(url, route, kind=kind, arguments=arguments, pool=pool)
