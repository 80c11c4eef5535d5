"""The SDK's request handler around the executor, and the JSON-RPC routes in front of it.

An assessment runs for long and reports progress, which is what the SDK's
``DefaultRequestHandler`` is built for, a send that returns at once (``returnImmediately``)
included; around it, without authentication no task can be read back (each authenticated caller
reads its own tasks): ``tasks/get`` answers task not found, ``tasks/list`` an empty page, and a
send asking to return at once is refused (:mod:`services.common.task_store`). An execution is
cancelled when its caller hangs up, and a request that starts an assessment is admitted only
while fewer than ``GREEN_MAX_RUNNING`` run (:mod:`services.green_agent.assessment.running`).
"""

from __future__ import annotations

import asyncio

from a2a.server.agent_execution import AgentExecutor
from a2a.server.context import ServerCallContext
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import TaskStore
from a2a.types import (
    AgentCard,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    Task,
)
from starlette.routing import BaseRoute, Route

from services.common.a2a import A2A_RPC_PATH, handler_routes
from services.common.task_store import empty_page, no_task, refuse_unreadable_send
from services.green_agent.assessment.running import Admission, Running


class _RequestHandler(DefaultRequestHandler):
    """The SDK's handler, but for reading tasks back (get, list), possibly off.

    It also stops the work of callers that have hung up.
    """

    def __init__(
        self,
        executor: AgentExecutor,
        tasks: TaskStore,
        card: AgentCard,
        running: Running,
        *,
        readable: bool,
    ) -> None:
        super().__init__(agent_executor=executor, task_store=tasks, agent_card=card)
        self._running = running
        self._readable = readable

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Message | Task:
        """``message/send``; the execution is cancelled if the request is (its client left)."""
        if not self._readable:
            refuse_unreadable_send(params)
        key = Running.key(context.user, params.message)
        try:
            result: Message | Task = await super().on_message_send(params, context)
        except asyncio.CancelledError:
            self._running.cancel(key)
            raise
        request = asyncio.current_task()
        if request is not None and request.cancelling():
            # The SDK's subscription swallows the cancellation and returns the task unfinished.
            self._running.cancel(key)
            raise asyncio.CancelledError
        return result

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        """``tasks/get``: the caller's own task (none where tasks are unreadable)."""
        if not self._readable:
            no_task(params)
        task: Task | None = await super().on_get_task(params, context)
        return task

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        """``tasks/list``: the caller's own tasks (an empty page where tasks are unreadable)."""
        if not self._readable:
            return await empty_page(params)
        page: ListTasksResponse = await super().on_list_tasks(params, context)
        return page


def a2a_routes(
    card: AgentCard,
    executor: AgentExecutor,
    tasks: TaskStore,
    running: Running,
    *,
    readable_tasks: bool,
) -> list[BaseRoute]:
    """The card at every :data:`~services.common.a2a.CARD_PATHS` and the executor behind JSON-RPC.

    JSON-RPC 1.0 and 0.3, admitting assessments through ``running``. ``readable_tasks`` false
    finds no task and lists none, and refuses sends asking to return at once: without
    authentication there is no caller to scope tasks to.
    """
    handler = _RequestHandler(executor, tasks, card, running, readable=readable_tasks)
    return [
        Route(r.path, Admission(r.app, running), methods=["POST"])
        if isinstance(r, Route) and r.path == A2A_RPC_PATH and r.methods == {"POST"}
        else r
        for r in handler_routes(card, handler)
    ]
