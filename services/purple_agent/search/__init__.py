"""How the purple agent reaches the search: one client, whatever the server speaks.

:class:`SearchClient` discovers the backend (:mod:`._discovery`): MCP streamable HTTP of the
2026-07-28 protocol spoken by our own client (:mod:`._mcp_wire` over :mod:`._pool`, measured
in ``docs/performance.md``: the agent's RSS 97 -> 70 MB and CPU 4.0 -> 3.2 ms per query against
the MCP SDK's client), the handshake era through the MCP SDK (:mod:`._sdk_fallback`), or the
seed's REST wire (:mod:`._rest`). Every backend's answer is read by one module (:mod:`._hits`)
and every failure is an :class:`McpCallError` with a reason label (:mod:`._errors`).
"""

from services.purple_agent.search._client import SearchClient
from services.purple_agent.search._discovery import Protocol, probes
from services.purple_agent.search._errors import McpCallError

__all__ = ["McpCallError", "Protocol", "SearchClient", "probes"]
