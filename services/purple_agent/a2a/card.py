"""The purple agent's card: who it is, what it takes and returns, where to reach it.

Two JSON-RPC interfaces on the same URL: protocol 1.0 for current clients and 0.3 for green agents
built on a2a-sdk 0.3 (with it, the served card also carries the legacy ``url``,
``preferredTransport`` and ``protocolVersion`` fields those clients require).
"""

from __future__ import annotations

from a2a.types import AgentCapabilities, AgentCard, AgentSkill

from services.common.a2a import jsonrpc_interfaces, provider, require_bearer
from services.common.limits import MAX_QUERY_CHARS, MAX_TOP_K
from services.purple_agent.settings import PurpleSettings

AGENT_NAME = "NFCorpus retrieval agent"
AGENT_VERSION = "0.1.0"
SKILL_ID = "nfcorpus_retrieval"


def build_card(settings: PurpleSettings, authenticated: bool = False) -> AgentCard:
    """Build the agent card announcing the URL of ``settings`` (and the bearer scheme)."""
    url = settings.public_url
    skill = AgentSkill(
        id=SKILL_ID,
        name="NFCorpus document retrieval",
        description=(
            'Send {"query": "<text>", "top_k": <1..100, default 5>} as JSON text (or as a data '
            "part), or just type a question (plain text is the query, with top_k 5); the query "
            f"has at most {MAX_QUERY_CHARS} characters. The task completes with "
            'one artifact "retrieval_results" holding one data part {"doc_ids": [...]}: exactly '
            "top_k unique NFCorpus document ids (fewer only if fewer exist), best first."
        ),
        tags=["retrieval", "search", "nfcorpus", "medical", "nutrition"],
        examples=[
            '{"query": "Do statins cause breast cancer?", "top_k": 5}',
            '{"query": "vitamin D and depression", "top_k": 10}',
            "Does vitamin D protect bones?",
        ],
        input_modes=["text/plain", "application/json"],
        output_modes=["application/json"],
    )
    card = AgentCard(
        name=AGENT_NAME,
        description=(
            "Answers NFCorpus retrieval queries with a ranked list of document ids, using the "
            f"search tool of an MCP retrieval server. top_k is 1..{MAX_TOP_K}; every request is "
            f"answered or failed with a clear message within {settings.deadline_s:g} s."
        ),
        version=AGENT_VERSION,
        provider=provider(url),
        supported_interfaces=jsonrpc_interfaces(url),
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["application/json"],
        skills=[skill],
    )
    return require_bearer(card) if authenticated else card
