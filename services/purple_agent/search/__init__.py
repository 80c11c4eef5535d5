"""How the purple agent reaches the search: one client, whatever the server speaks.

:class:`SearchClient` (:mod:`.client`) discovers the backend: MCP streamable HTTP of the
2026-07-28 protocol spoken by our own client (:mod:`.mcp_backend` over the keep-alive
connections of :mod:`services.common.http_pool`; it spares the agent the MCP SDK's memory and its
per-call validation, as measured in ``docs/performance.md``), the handshake era through the MCP SDK
(:mod:`.sdk_fallback`), or the seed's REST wire (:mod:`.rest_backend`). Every backend's answer is
read the same way and every failure is an :class:`McpCallError` with a reason label
(:mod:`.backend`).
"""

from services.purple_agent.search.backend import McpCallError
from services.purple_agent.search.client import SearchClient, SearchProtocol, probes

__all__ = ["McpCallError", "SearchClient", "SearchProtocol", "probes"]
