"""The green agent's A2A request handler: the SDK's, with tasks readable or not, and hang-ups.

The assessment runs for long and reports progress, which is what the SDK's
``DefaultRequestHandler`` is built for; this module adds what the evaluator needs around it:
``tasks/get`` and ``tasks/list`` refused without authentication, and the execution cancelled when
its caller hangs up.
"""

from __future__ import annotations

import asyncio
from typing import Any

from a2a.auth.user import User
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import TaskStore, TaskUpdater
from a2a.types import (
    AgentCard,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.errors import UnsupportedOperationError
from starlette.routing import BaseRoute

from services.common.a2a import handler_routes
from services.telemetry.tracing import current_trace_id


class _Running:
    """The executions of requests in flight, by caller and message id.

    The SDK runs the executor in a task of its own, which goes on when the request that started
    it is cancelled (its client hung up: :mod:`services.common.disconnect`). The handler cancels
    it through this registry instead, so an agent stops calling its own backends for nobody. The
    caller's name is part of the key: one caller cannot cancel another's request by reusing its
    message id.
    """

    def __init__(self) -> None:
        self._tasks: dict[tuple[str, str], asyncio.Task[Any]] = {}

    @staticmethod
    def key(user: User | None, message: Message | None) -> tuple[str, str]:
        name = user.user_name if user is not None and user.is_authenticated else ""
        return name, message.message_id if message is not None else ""

    def add(self, key: tuple[str, str]) -> None:
        task = asyncio.current_task()
        if task is None or not key[1]:
            return
        self._tasks[key] = task
        task.add_done_callback(lambda done: self._tasks.pop(key, None))

    def cancel(self, key: tuple[str, str]) -> None:
        task = self._tasks.pop(key, None)
        if task is not None:
            task.cancel()


_RUNNING = _Running()


class _RequestHandler(DefaultRequestHandler):
    """The SDK's handler, but for reading tasks back (get, list), possibly off.

    It also stops the work of callers that have hung up.
    """

    def __init__(
        self, executor: AgentExecutor, tasks: TaskStore, card: AgentCard, *, readable: bool
    ) -> None:
        super().__init__(agent_executor=executor, task_store=tasks, agent_card=card)
        self._readable = readable

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Message | Task:
        """``message/send``; the execution is cancelled if the request is (its client left)."""
        key = _Running.key(context.user, params.message)
        try:
            result: Message | Task = await super().on_message_send(params, context)
        except asyncio.CancelledError:
            _RUNNING.cancel(key)
            raise
        request = asyncio.current_task()
        if request is not None and request.cancelling():
            # The SDK's subscription swallows the cancellation and returns the task unfinished.
            _RUNNING.cancel(key)
            raise asyncio.CancelledError
        return result

    def _refuse_unless_readable(self) -> None:
        if not self._readable:
            raise UnsupportedOperationError(
                message="reading tasks back needs authentication (each caller then sees only "
                "its own tasks); message/send returns the finished task"
            )

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        """``tasks/get``: the caller's own task, when tasks are readable."""
        self._refuse_unless_readable()
        task: Task | None = await super().on_get_task(params, context)
        return task

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        """``tasks/list``: the caller's own tasks, when tasks are readable."""
        self._refuse_unless_readable()
        page: ListTasksResponse = await super().on_list_tasks(params, context)
        return page


def a2a_routes(
    card: AgentCard, executor: AgentExecutor, tasks: TaskStore, *, readable_tasks: bool = True
) -> list[BaseRoute]:
    """The card at every :data:`~services.common.a2a.CARD_PATHS` and the executor behind JSON-RPC (1.0 and 0.3).

    ``readable_tasks`` false refuses ``tasks/get`` and ``tasks/list``: without authentication
    there is no caller to scope them to.
    """
    return handler_routes(card, _RequestHandler(executor, tasks, card, readable=readable_tasks))


async def open_task(context: RequestContext, event_queue: EventQueue) -> TaskUpdater:
    """The updater of this request's task; a new task is enqueued first, as the SDK requires.

    The task is built by hand rather than with ``new_task_from_user_message``, which refuses an
    empty text part before the executor could fail the task with a useful message. Its metadata
    carries the request's ``trace_id``: the caller finds the trace from the task alone. The
    running execution is registered, to be cancelled if its caller hangs up.
    """
    _RUNNING.add(
        _Running.key(context.call_context.user if context.call_context else None, context.message)
    )
    task = context.current_task
    if task is None:
        task = Task(
            id=context.task_id or "",
            context_id=context.context_id or "",
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
            history=[context.message] if context.message is not None else [],
        )
        if (trace_id := current_trace_id()) is not None:
            task.metadata.update({"trace_id": trace_id})
        await event_queue.enqueue_event(task)
    return TaskUpdater(event_queue, task.id, task.context_id)
