"""Agent-card parts shared by our A2A agents."""

from __future__ import annotations

from a2a.types import AgentInterface, AgentProvider
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0

ORGANIZATION = "nfcorpus-retrieval"


def jsonrpc_interfaces(url: str) -> list[AgentInterface]:
    """JSON-RPC at ``url`` in A2A 1.0 and 0.3.

    The 0.3 interface is what makes the served card carry the legacy ``url``,
    ``preferredTransport`` and ``protocolVersion`` fields an a2a-sdk 0.3 client requires.
    """
    return [
        AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION_1_0),
        AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION_0_3),
    ]


def provider(url: str) -> AgentProvider:
    """Who runs the agent."""
    return AgentProvider(organization=ORGANIZATION, url=url)
