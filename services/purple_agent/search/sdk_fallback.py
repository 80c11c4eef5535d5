"""Servers the plain client does not speak to, reached through the MCP SDK (imported only then).

:class:`.mcp_backend.McpWire` speaks the sessionless protocol of 2026-07-28 and nothing
else. Two kinds of server need more, and get a full SDK client session per call (slower, but
exactly what the SDK would do):

- a handshake-era server (no ``server/discover``, or no version of ours): the session
  initializes each time;
- a tool whose input schema asks for arguments mirrored into ``Mcp-Param-*`` headers
  (``x-mcp-header``): the session lists the tools before it calls, as the SDK mirrors only the
  arguments of tools it has listed.

Its failures are translated into the plain client's (:mod:`.backend`),
so retries and metrics treat both routes alike.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import mcp_types
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import MCPError

from services.common.http_pool import ConnectFailed, ConnectionBroken
from services.common.jsonrpc import RpcError
from services.purple_agent.search.backend import http_failure, leaf_error, refused
from services.telemetry.tracing import inject_headers


async def _inject_trace_context(request: httpx2.Request) -> None:
    # Runs in the calling task's context (the transport carries it over), so the current span
    # is the MCP call's span.
    request.headers.update(inject_headers())


async def _raise_if_refused(response: httpx2.Response) -> None:
    # The transport turns every HTTP error into one generic JSON-RPC error ("Server returned an
    # error response"): the status is kept, as the plain client keeps it.
    status = response.status_code
    if refused(status):
        raise http_failure(status, "")
    if status >= 400:
        raise http_failure(status, (await response.aread())[:200].decode("utf-8", "replace"))


def _translated(error: BaseException) -> BaseException:
    """The plain client's exception for one of the SDK's or httpx2's."""
    leaf = leaf_error(error)
    if isinstance(leaf, httpx2.ConnectError | httpx2.ConnectTimeout):
        return ConnectFailed(f"{type(leaf).__name__}: {leaf}")
    if isinstance(leaf, httpx2.TimeoutException):
        return TimeoutError(str(leaf))
    if isinstance(leaf, httpx2.TransportError):
        return ConnectionBroken(f"{type(leaf).__name__}: {leaf}")
    if isinstance(leaf, MCPError):
        if leaf.code == mcp_types.CONNECTION_CLOSED:
            return ConnectionBroken(leaf.message)
        return RpcError(leaf.code, leaf.message, leaf.error.data)
    return leaf


class SdkFallback:
    """One SDK client session per request to ``url`` (see the module docstring)."""

    def __init__(
        self, url: str, headers: Mapping[str, str], *, timeout_s: float, max_connections: int
    ) -> None:
        self.url = url
        self.headers = dict(headers)
        self._http = httpx2.AsyncClient(
            timeout=httpx2.Timeout(timeout_s),
            limits=httpx2.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            ),
            headers=dict(headers),
            event_hooks={"request": [_inject_trace_context], "response": [_raise_if_refused]},
        )
        self.list_first = False  # list the tools in each session before calling (x-mcp-header)

    @asynccontextmanager
    async def _session(self) -> AsyncIterator[Client]:
        transport = streamable_http_client(self.url, http_client=self._http)
        try:
            async with Client(transport, mode="auto", cache=None) as client:
                yield client
        except Exception as e:
            translated = _translated(e)
            if translated is e:
                raise
            raise translated from e

    async def tool(self, name: str) -> dict[str, Any] | None:
        """The tool's definition as ``tools/list`` gives it, or None."""
        async with self._session() as client:
            tools = (await client.list_tools()).tools
        for tool in tools:
            if tool.name == name:
                return tool.model_dump(by_alias=True, mode="json", exclude_none=True)
        return None

    async def call_tool(self, name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
        """The raw result of one ``tools/call``, in a session of its own."""
        params = mcp_types.CallToolRequestParams(name=name, arguments=dict(arguments))
        request = mcp_types.CallToolRequest(params=params)
        async with self._session() as client:
            if self.list_first:
                await client.list_tools()
            result = await client.session.send_request(request, mcp_types.CallToolResult)
        return result.model_dump(by_alias=True, mode="json", exclude_none=True)

    async def aclose(self) -> None:
        """Close the HTTP client."""
        await self._http.aclose()
