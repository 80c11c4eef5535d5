"""Calls the ``search_nfcorpus`` MCP tool over keep-alive connections, with timeouts and retries.

The protocol version is negotiated once (``server/discover``, then ``tools/list``, by the SDK's
client over ``httpx2``) and adopted by one long-lived SDK ``ClientSession`` whose requests are
single POSTs from the caller's own task (:mod:`services.purple_agent.mcp_post`, over
:mod:`services.purple_agent.http_pool`): no session, stream or task is set up per call, and a
failed call takes nothing down with it. After a failure that is not the tool's own, the version
is negotiated again, in case the server was replaced by another version. A handshake-era server
(no ``server/discover``) gets a full SDK session per call, which initializes each time.

The ranking policy reads ids and scores only, so the agent asks for hits without their abstracts
(``include_text: false``) when the server's tool offers that argument (it learns so from
``tools/list`` while negotiating: an older server during a rolling upgrade gets the plain call).
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any
from urllib.parse import urlsplit

import httpx2
import mcp_types
from mcp import Client
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from opentelemetry.trace import SpanKind, StatusCode
from pydantic import BaseModel

from services.purple_agent.http_pool import OriginPool
from services.purple_agent.mcp_errors import McpCallError, classify, raise_if_refused
from services.purple_agent.mcp_post import PostDispatcher
from services.purple_agent.metrics import MCP_CALL_SECONDS, MCP_RETRIES
from services.purple_agent.ranking import Candidate
from services.telemetry import exemplars
from services.telemetry.tracing import inject_headers, tracer

log = logging.getLogger(__name__)
_tracer = tracer(__name__)

TOOL_NAME = "search_nfcorpus"
#: The tool's optional argument that leaves the abstracts out of the hits.
WITHOUT_TEXT = {"include_text": False}
#: Longest pause between two attempts.
MAX_BACKOFF_S = 1.0


class SearchOutput(BaseModel):
    """Structured output of the tool."""

    results: list[Candidate]


async def _inject_trace_context(request: httpx2.Request) -> None:
    # Runs in the calling task's context (the transport carries it over), so the current span
    # is the MCP call's span.
    request.headers.update(inject_headers())


def offers_include_text(tools: list[mcp_types.Tool]) -> bool:
    """Whether the search tool offers ``include_text`` (servers before it reject the argument)."""
    for tool in tools:
        if tool.name == TOOL_NAME:
            return "include_text" in (tool.input_schema or {}).get("properties", {})
    return False


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
        self._http: httpx2.AsyncClient | None = None
        self._pool: OriginPool | None = None
        self._mode: str | None = None
        self._discover: mcp_types.DiscoverResult | None = None
        # The modern protocol's session (None: not negotiated, or a handshake-era server).
        self._session: ClientSession | None = None
        self._extra_arguments: dict[str, Any] = {}
        self._negotiate_lock = asyncio.Lock()

    @property
    def http(self) -> httpx2.AsyncClient:
        """The HTTP client of negotiation, readiness and handshake-era servers (made in the loop)."""
        if self._http is None:
            connections = self._max_connections
            self._http = httpx2.AsyncClient(
                timeout=httpx2.Timeout(self._timeout_s),
                limits=httpx2.Limits(
                    max_connections=connections, max_keepalive_connections=connections
                ),
                headers=self._headers,
                event_hooks={"request": [_inject_trace_context], "response": [raise_if_refused]},
            )
        return self._http

    @property
    def pool(self) -> OriginPool:
        """The tool calls' keep-alive connections, created on first use in the running loop."""
        if self._pool is None:
            self._pool = OriginPool(self.url, self._max_connections)
        return self._pool

    async def aclose(self) -> None:
        """Close the connection pools."""
        if self._http is not None:
            await self._http.aclose()
            self._http = None
        if self._pool is not None:
            await self._pool.aclose()
            self._pool = None

    def _session_for(self, mode: str, discover: mcp_types.DiscoverResult | None) -> Client:
        transport = streamable_http_client(self.url, http_client=self.http)
        return Client(transport, mode=mode, prior_discover=discover, cache=None)

    async def _negotiate(self) -> tuple[str, mcp_types.DiscoverResult | None, ClientSession | None]:
        """The protocol version, its discover result and session (None: handshake era)."""
        if self._mode is None:
            async with self._negotiate_lock:
                if self._mode is None:
                    await self._negotiate_now()
        assert self._mode is not None
        return self._mode, self._discover, self._session

    async def _negotiate_now(self) -> None:
        async with self._session_for("auto", None) as client:
            if client.protocol_version in MODERN_PROTOCOL_VERSIONS:
                discover: mcp_types.DiscoverResult | None = await client.session.discover()
                mode = client.protocol_version
            else:  # a handshake-era server: every session initializes
                discover, mode = None, "legacy"
            tools = (await client.list_tools()).tools
        self._extra_arguments = WITHOUT_TEXT if offers_include_text(tools) else {}
        self._session = None
        if discover is not None:
            # Never entered: its dispatcher has no receive loop for it to run, and without it
            # the session is the typed layer alone (envelope, headers, result validation).
            dispatcher = PostDispatcher(self.url, self.pool, self._headers)
            self._session = ClientSession(dispatcher=dispatcher)
            self._session.adopt(discover)
        self._discover, self._mode = discover, mode
        log.info("MCP server at %s speaks protocol %s", self.url, mode)

    async def _call_once(self, arguments: dict[str, Any], timeout_s: float) -> SearchOutput:
        async with asyncio.timeout(timeout_s):
            mode, discover, session = await self._negotiate()
            params = mcp_types.CallToolRequestParams(
                name=TOOL_NAME, arguments={**arguments, **self._extra_arguments}
            )
            request = mcp_types.CallToolRequest(params=params)
            if session is not None:
                result = await session.send_request(
                    request, mcp_types.CallToolResult, request_read_timeout_seconds=timeout_s
                )
            else:
                async with self._session_for(mode, discover) as client:
                    result = await client.session.send_request(
                        request, mcp_types.CallToolResult, request_read_timeout_seconds=timeout_s
                    )
        if result.is_error:
            text = " ".join(c.text for c in result.content if isinstance(c, mcp_types.TextContent))
            raise McpCallError("mcp_tool_error", f"search tool error: {text}", retryable=False)
        return SearchOutput.model_validate(result.structured_content)

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
                self._mode = None  # negotiate again: the server may have been replaced
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
        try:
            response = await self.http.get(health_url, timeout=timeout_s)
        except httpx2.HTTPError as e:
            return False, f"MCP server unreachable at {health_url}: {type(e).__name__}"
        if response.status_code != 200:
            return False, f"MCP server health {health_url} answered {response.status_code}"
        return True, "ok"
