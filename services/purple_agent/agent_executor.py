"""A2A executor of the purple agent: turns the agent's answer into task events, nothing more.

On success the task gets exactly one artifact, ``retrieval_results``, with one data part
``{"doc_ids": [...]}``, and completes without a message: a 0.3 green agent concatenates the final
status text and every artifact part before ``json.loads``, so anything else would break it.
"""

from __future__ import annotations

from a2a.helpers import new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.utils.errors import UnsupportedOperationError

from services.common.a2a import open_task
from services.purple_agent.agent import AgentFailure, RetrievalAgent

ARTIFACT_NAME = "retrieval_results"


class RetrievalExecutor(AgentExecutor):
    """Runs :class:`RetrievalAgent` for each incoming message."""

    def __init__(self, agent: RetrievalAgent) -> None:
        self._agent = agent

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Answer one message: enqueue the task, then one artifact and completion, or failure."""
        updater = await open_task(context, event_queue)
        try:
            doc_ids = await self._agent.answer(context.message)
        except AgentFailure as e:
            await updater.failed(updater.new_agent_message([new_text_part(str(e))]))
            return
        await updater.add_artifact([new_data_part({"doc_ids": doc_ids})], name=ARTIFACT_NAME)
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Refuse: requests finish within the deadline, so cancelling is not supported."""
        raise UnsupportedOperationError(message="cancel is not supported: tasks finish in seconds")
