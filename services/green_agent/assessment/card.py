"""The evaluator's A2A card: one skill, the NFCorpus assessment, with an example request."""

from __future__ import annotations

from a2a.types import AgentCapabilities, AgentCard, AgentSkill

from services.common.a2a import jsonrpc_interfaces, provider, require_bearer

EXAMPLE = (
    '{"participants": {"retrieval_agent": "http://127.0.0.1:9010/"}, '
    '"config": {"num_queries": 50, "top_k": 5, "random_seed": 42}}'
)


def build_card(url: str, *, authenticated: bool = False) -> AgentCard:
    """Build the evaluator's card announcing ``url`` (and the bearer scheme, when it wants one)."""
    skill = AgentSkill(
        id="nfcorpus_assessment",
        name="NFCorpus retrieval assessment",
        description=(
            "Samples NFCorpus test queries with a seed, sends each to the participant "
            "'retrieval_agent' over A2A, checks every reply against the answer contract and "
            "reports NDCG@5/@10 (trec_eval), MRR, precision, recall, latency and failures."
        ),
        tags=["evaluation", "retrieval", "nfcorpus", "agentbeats"],
        examples=[EXAMPLE],
        input_modes=["text/plain", "application/json"],
        output_modes=["text/plain", "application/json"],
    )
    card = AgentCard(
        name="NFCorpus retrieval evaluator",
        description="Green agent: evaluates a retrieval agent on the NFCorpus test split.",
        version="0.1.0",
        provider=provider(url),
        supported_interfaces=jsonrpc_interfaces(url),
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[skill],
    )
    return require_bearer(card) if authenticated else card
