"""The MCP backend: the sessionless protocol spoken by our own client, else the SDK's session.

The probe asks ``server/discover`` (2026-07-28); a JSON-RPC error there is a handshake-era
server, reached through the MCP SDK (:mod:`._sdk_fallback`, imported only then), as is a tool
whose arguments must be mirrored into headers. The tool must be there (``tools/list``), and the
agent asks for hits without their abstracts when the tool offers ``include_text``: the ranking
policy reads ids and scores only.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urljoin

from services.purple_agent.search._backend import NotSpoken, not_here
from services.purple_agent.search._errors import BadAnswer, ServerFailed
from services.purple_agent.search._hits import Hits
from services.purple_agent.search._mcp_wire import PROTOCOL_VERSION, McpWire, ToolRoute
from services.purple_agent.search._pool import (
    ConnectFailed,
    ConnectionBroken,
    OriginPool,
    request_target,
)
from services.purple_agent.search._tool import (
    TOOL_NAME,
    WITHOUT_TEXT,
    mirrors_headers,
    offers_include_text,
    tool_hits,
)

if TYPE_CHECKING:  # imported when a server needs it (it loads the MCP SDK)
    from services.purple_agent.search._sdk_fallback import SdkFallback

log = logging.getLogger(__name__)

#: Makes (or hands back) the SDK's route to an endpoint.
FallbackFactory = Callable[[str], "SdkFallback"]


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

    async def search(self, query: str, top_k: int) -> Hits:
        """One ``tools/call``."""
        arguments = {"query": query, "top_k": top_k, **self._arguments}
        return tool_hits(await self._route.call_tool(TOOL_NAME, arguments))

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
