"""Calls the ``search_nfcorpus`` MCP tool over keep-alive connections, with timeouts and retries.

The protocol is negotiated once (``server/discover``, then ``tools/list``); after that each call
is a single POST from the caller's own task (:mod:`services.purple_agent.mcp_wire`, over
:mod:`services.purple_agent.http_pool`): no session, stream or task is set up per call, and a
failed call takes nothing down with it. After a failure that is not the tool's own, the
protocol is negotiated again, in case the server was replaced by another version. A server the
plain client does not speak to (handshake era, or a tool mirroring arguments into headers) is
called through the MCP SDK instead, a session per call
(:mod:`services.purple_agent.mcp_sdk_fallback`, the only module that imports the SDK).

The ranking policy reads ids and scores only, so the agent asks for hits without their abstracts
(``include_text: false``) when the server's tool offers that argument (it learns so from
``tools/list`` while negotiating: an older server during a rolling upgrade gets the plain call).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from opentelemetry.trace import SpanKind, StatusCode

from services.purple_agent.http_pool import (
    ConnectFailed,
    ConnectionBroken,
    OriginPool,
    request_target,
)
from services.purple_agent.mcp_errors import McpCallError, classify
from services.purple_agent.mcp_wire import PROTOCOL_VERSION, McpWire, ToolRoute
from services.purple_agent.metrics import MCP_CALL_SECONDS, MCP_RETRIES
from services.purple_agent.ranking import Candidate
from services.purple_agent.search_tool import (
    TOOL_NAME,
    WITHOUT_TEXT,
    SearchOutput,
    mirrors_headers,
    offers_include_text,
    search_output,
)
from services.telemetry import exemplars
from services.telemetry.tracing import tracer

if TYPE_CHECKING:  # imported when a server needs it (it loads the MCP SDK)
    from services.purple_agent.mcp_sdk_fallback import SdkFallback

log = logging.getLogger(__name__)
_tracer = tracer(__name__)

#: Longest pause between two attempts.
MAX_BACKOFF_S = 1.0


class McpSearchClient:
    """Pooled client of the MCP search tool."""

    def __init__(
        self,
        url: str,
        *,
        timeout_s: float,
        retries: int,
        backoff_s: float,
        max_connections: int,
        authorization: str | None = None,
    ) -> None:
        self.url = url
        parsed = urlsplit(url)
        self._address = (
            parsed.hostname or "",
            parsed.port or (443 if parsed.scheme == "https" else 80),
        )
        self._headers = {"authorization": authorization} if authorization else {}
        self._timeout_s = timeout_s
        self._retries = retries
        self._backoff_s = backoff_s
        self._max_connections = max_connections
        self._pool: OriginPool | None = None
        self._health_pool: OriginPool | None = None
        self._route: ToolRoute | None = None  # None: not negotiated (again) yet
        self._fallback: SdkFallback | None = None  # made for the first server that needs it
        self._extra_arguments: dict[str, Any] = {}
        self._negotiate_lock = asyncio.Lock()

    @property
    def pool(self) -> OriginPool:
        """The tool calls' keep-alive connections, created on first use in the running loop."""
        if self._pool is None:
            self._pool = OriginPool(self.url, self._max_connections)
        return self._pool

    async def aclose(self) -> None:
        """Close the connection pools."""
        self._route = None
        if self._fallback is not None:
            await self._fallback.aclose()
            self._fallback = None
        for pool in (self._pool, self._health_pool):
            if pool is not None:
                await pool.aclose()
        self._pool = self._health_pool = None

    async def _negotiate(self) -> ToolRoute:
        """The route to the tool, negotiated on first use (and again after a failure)."""
        route = self._route
        if route is None:
            async with self._negotiate_lock:
                if self._route is None:
                    self._route = await self._negotiate_now()
                route = self._route
        return route

    async def _negotiate_now(self) -> ToolRoute:
        wire = McpWire(self.url, self.pool, self._headers)
        modern = await wire.discover() is not None
        tool = await wire.tool(TOOL_NAME) if modern else None
        route: ToolRoute = wire
        if modern and not mirrors_headers(tool):
            log.info("MCP server at %s speaks protocol %s", self.url, PROTOCOL_VERSION)
        else:
            route = fallback = self._sdk_fallback()
            tool = await fallback.tool(TOOL_NAME)
            fallback.list_first = mirrors_headers(tool)
            log.info("MCP server at %s is called through the MCP SDK", self.url)
        self._extra_arguments = WITHOUT_TEXT if offers_include_text(tool) else {}
        return route

    def _sdk_fallback(self) -> SdkFallback:
        """The SDK's route, one per client (kept across negotiations: calls may be in flight)."""
        if self._fallback is None:
            # Only a server the plain client does not speak to loads the SDK.
            from services.purple_agent.mcp_sdk_fallback import SdkFallback

            self._fallback = SdkFallback(
                self.url,
                self._headers,
                timeout_s=self._timeout_s,
                max_connections=self._max_connections,
            )
        return self._fallback

    async def _call_once(self, arguments: dict[str, Any], timeout_s: float) -> SearchOutput:
        async with asyncio.timeout(timeout_s):
            route = await self._negotiate()
            result = await route.call_tool(TOOL_NAME, {**arguments, **self._extra_arguments})
        return search_output(result)

    async def search(self, query: str, top_k: int, deadline: float) -> list[Candidate]:
        """Candidates for ``query``, best first.

        Args:
            query: The query text.
            top_k: How many candidates to ask for.
            deadline: ``time.monotonic()`` by which the answer is needed.

        Raises:
            McpCallError: The call failed and retries (within the deadline) did not help.

        """
        arguments = {"query": query, "top_k": top_k}
        attempt = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise McpCallError(
                    "deadline", "deadline reached before the MCP call", retryable=False
                )
            started = time.perf_counter()
            name = f"tools/call {TOOL_NAME}"
            with _tracer.start_as_current_span(name, kind=SpanKind.CLIENT) as span:
                # Retries are siblings under the request's span: one trace, attempt by attempt.
                span.set_attribute("mcp.attempt", attempt + 1)
                span.set_attribute("server.address", self._address[0])
                span.set_attribute("server.port", self._address[1])
                try:
                    output = await self._call_once(arguments, min(self._timeout_s, remaining))
                except Exception as e:
                    error = classify(e, self.url)
                    span.set_status(StatusCode.ERROR, str(error))
                    span.set_attribute("error.type", error.reason)
                else:
                    exemplars.observe(MCP_CALL_SECONDS, time.perf_counter() - started, outcome="ok")
                    return output.results
            exemplars.observe(
                MCP_CALL_SECONDS,
                time.perf_counter() - started,
                outcome=error.reason.removeprefix("mcp_"),
            )
            if error.reason != "mcp_tool_error":
                self._route = None  # negotiate again: the server may have been replaced
            delay = min(self._backoff_s * 2**attempt, MAX_BACKOFF_S)
            if not error.retryable or attempt >= self._retries:
                raise error
            if time.monotonic() + delay >= deadline:
                raise error
            attempt += 1
            MCP_RETRIES.inc()
            log.warning("MCP call failed (%s), retry %d in %.2fs", error, attempt, delay)
            await asyncio.sleep(delay)

    async def ready(self, health_url: str, timeout_s: float) -> tuple[bool, str]:
        """Whether the MCP server answers its health endpoint, and a short explanation."""
        if self._health_pool is None:
            self._health_pool = OriginPool(health_url, 1)
        target = request_target(health_url)
        try:
            async with asyncio.timeout(timeout_s):
                async with self._health_pool.request("GET", target, []) as response:
                    await response.read()
        except (TimeoutError, ConnectFailed, ConnectionBroken) as e:
            return False, f"MCP server unreachable at {health_url}: {type(e).__name__}"
        if response.status != 200:
            return False, f"MCP server health {health_url} answered {response.status}"
        return True, "ok"
