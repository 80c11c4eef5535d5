"""The purple agent's answer as A2A sees it: one artifact, or the reason the task failed.

On success the task gets exactly one artifact, ``retrieval_results``, with one data part
``{"doc_ids": [...]}``, and completes without a message: a 0.3 green agent concatenates the final
status text and every artifact part before ``json.loads``, so anything else would break it.
"""

from __future__ import annotations

from a2a.helpers import new_data_part
from a2a.types import Artifact, Message

from services.purple_agent.a2a_handler import Answer, Failed
from services.purple_agent.agent import AgentFailure, RetrievalAgent

ARTIFACT_NAME = "retrieval_results"


def answer_with(agent: RetrievalAgent) -> Answer:
    """What :class:`~services.purple_agent.a2a_handler.DirectRequestHandler` runs for each message."""

    async def answer(message: Message) -> Artifact | Failed:
        try:
            doc_ids = await agent.answer(message)
        except AgentFailure as e:
            return Failed(str(e))
        return Artifact(name=ARTIFACT_NAME, parts=[new_data_part({"doc_ids": doc_ids})])

    return answer
