"""An A2A request handler for agents that answer each message at once, in the request's own task.

The SDK's ``DefaultRequestHandler`` serves agents that run for long and talk back while they
work: every message gets an active task with a producer task running the executor, a consumer
task, an event queue between them, a task manager saving each event to the store and a span
around each of those steps. An agent whose whole answer is one artifact within a deadline needs
none of it: :class:`DirectRequestHandler` awaits the agent's answer in the task serving the
request and builds the finished task itself. It is a ``RequestHandler``, the SDK's extension
point, so the SDK's routes still speak JSON-RPC 1.0 and 0.3, and streaming, around it.

What it keeps: the task the SDK's handler returns (a new task and context id, the message in the
history, one artifact and a timestamped final status, ``trace_id`` in the metadata), the same
events when streaming (the task, the artifact, the final status), the SDK's checks of the request,
and the cancellation of the work when the request is cancelled (its caller hung up). Tasks are
kept only when there is a store to read them back from (``tasks/get`` and ``tasks/list``, with
authentication on); a message names no earlier task.

A send asking to return at once (``returnImmediately``; 0.3: ``blocking: false``, A2A 3.2.2) is
answered with the task working, while the agent answers it in the background: ``GetTask`` then
reads it, ``SubscribeToTask`` streams the rest of it and ``CancelTask`` stops it. At most
``max_detached`` answers run so at once (the guard's bound on requests in flight): beyond, a send
waits for its answer, so no burst of such sends makes more work than the guard admits. Without a
store it is refused (:func:`~services.common.task_store.refuse_unreadable_send`): nobody could
read the answer. Without a store ``GetTask`` answers task not found and ``ListTasks`` an empty
page (:mod:`services.common.task_store`).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncGenerator, Awaitable, Callable
from dataclasses import dataclass

from a2a.helpers import new_text_part
from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import RequestHandler, validate_request_params
from a2a.server.request_handlers.request_handler import validate
from a2a.server.tasks import TaskStore
from a2a.types import (
    AgentCard,
    Artifact,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.utils.task import apply_history_length, validate_history_length, validate_page_size

from services.common.task_store import empty_page, no_task, refuse_unreadable_send
from services.telemetry.tracing import current_trace_id

NO_PUSH = "push notifications are not supported: message/send returns the finished task"


@dataclass(frozen=True, slots=True)
class Failed:
    """The agent could not answer; ``text`` says why (the final status message)."""

    text: str


#: The agent: one artifact answering the message, or why it failed.
Answer = Callable[[Message], Awaitable[Artifact | Failed]]


def _new_id() -> str:
    return str(uuid.uuid4())


class DirectRequestHandler(RequestHandler):
    """Answers each message with one finished task (see the module docstring).

    ``tasks`` None: tasks are not kept, and none can be read back.
    """

    def __init__(
        self, answer: Answer, card: AgentCard, tasks: TaskStore | None, max_detached: int = 64
    ) -> None:
        self._answer = answer
        self._card = card
        self._tasks = tasks
        self._max_detached = max_detached
        #: The answers running after their send returned, by task id.
        self._detached: dict[str, asyncio.Task[Task]] = {}

    async def aclose(self) -> None:
        """Stop the answers still running in the background (the server is stopping)."""
        jobs = list(self._detached.values())
        for job in jobs:
            job.cancel()
        await asyncio.gather(*jobs, return_exceptions=True)

    async def _open(self, params: SendMessageRequest, context: ServerCallContext) -> Task:
        """The submitted task of a new message, its message in the history."""
        validate_history_length(params.configuration)
        message = params.message
        if message.task_id:
            stored = await self._stored(message.task_id, context)
            raise UnsupportedOperationError(
                message=f"Task {stored.id} is in terminal state: a message starts a new task"
            )
        message.task_id = _new_id()
        message.context_id = message.context_id or _new_id()
        task = Task(
            id=message.task_id,
            context_id=message.context_id,
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
            history=[message],
        )
        if (trace_id := current_trace_id()) is not None:
            task.metadata.update({"trace_id": trace_id})
        return task

    async def _finish(self, task: Task, context: ServerCallContext) -> Artifact | None:
        """Run the agent and record its outcome on ``task``; the new artifact, if any."""
        outcome = await self._answer(task.history[0])
        artifact: Artifact | None = None
        if isinstance(outcome, Failed):
            task.status.state = TaskState.TASK_STATE_FAILED
            task.status.message.CopyFrom(
                Message(
                    role=Role.ROLE_AGENT,
                    task_id=task.id,
                    context_id=task.context_id,
                    message_id=_new_id(),
                    parts=[new_text_part(outcome.text)],
                )
            )
        else:
            artifact = outcome
            artifact.artifact_id = artifact.artifact_id or _new_id()
            task.artifacts.append(artifact)
            task.status.state = TaskState.TASK_STATE_COMPLETED
        task.status.timestamp.GetCurrentTime()
        if self._tasks is not None:
            await self._tasks.save(task, context)
        return artifact

    @validate_request_params
    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Task:
        """``message/send``: the finished task, or the working one when asked to return at once."""
        immediate = params.configuration.return_immediately
        if immediate and self._tasks is None:
            refuse_unreadable_send(params)
        task = await self._open(params, context)
        if immediate and len(self._detached) < self._max_detached:
            return await self._detach(task, params, context)
        await self._finish(task, context)
        return apply_history_length(task, params.configuration)

    async def _detach(
        self, task: Task, params: SendMessageRequest, context: ServerCallContext
    ) -> Task:
        """Start answering ``task`` in the background; the task as it is now, working and kept."""
        assert self._tasks is not None  # refused before, without a store
        task.status.state = TaskState.TASK_STATE_WORKING
        task.status.timestamp.GetCurrentTime()
        await self._tasks.save(task, context)
        working = Task()
        working.CopyFrom(task)  # the task changes as the answer comes
        job = asyncio.create_task(self._finish_detached(task, context), name=f"answer {task.id}")
        self._detached[task.id] = job
        job.add_done_callback(lambda _: self._detached.pop(task.id, None))
        # Let it start: a task cancelled before its first step would never record its end.
        await asyncio.sleep(0)
        return apply_history_length(working, params.configuration)

    async def _finish_detached(self, task: Task, context: ServerCallContext) -> Task:
        """:meth:`_finish` for a detached answer; cancelled (``CancelTask``), the task is too."""
        try:
            await self._finish(task, context)
        except asyncio.CancelledError:
            # Nobody awaits this task: its outcome is what it leaves in the store.
            task.status.state = TaskState.TASK_STATE_CANCELED
            task.status.timestamp.GetCurrentTime()
            if self._tasks is not None:
                await self._tasks.save(task, context)
        return task

    @validate_request_params
    @validate(lambda self: self._card.capabilities.streaming, "Streaming is not supported")
    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """``message/stream``: the submitted task, then its artifact and its final status."""
        task = await self._open(params, context)
        submitted = Task()
        submitted.CopyFrom(task)  # the task changes below, maybe before a consumer reads this one
        yield apply_history_length(submitted, params.configuration)
        artifact = await self._finish(task, context)
        if artifact is not None:
            yield TaskArtifactUpdateEvent(
                task_id=task.id, context_id=task.context_id, artifact=artifact
            )
        yield TaskStatusUpdateEvent(task_id=task.id, context_id=task.context_id, status=task.status)

    async def _stored(self, task_id: str, context: ServerCallContext) -> Task:
        task = None if self._tasks is None else await self._tasks.get(task_id, context)
        if task is None:
            raise TaskNotFoundError
        return task

    @validate_request_params
    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task:
        """``tasks/get``: the caller's own task (none without a store)."""
        if self._tasks is None:
            no_task(params)
        validate_history_length(params)
        return apply_history_length(await self._stored(params.id, context), params)

    @validate_request_params
    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        """``tasks/list``: the caller's own tasks (an empty page without a store)."""
        if self._tasks is None:
            return await empty_page(params)
        validate_history_length(params)
        if params.HasField("page_size"):
            validate_page_size(params.page_size)
        page = await self._tasks.list(params, context)
        for task in page.tasks:
            if not params.include_artifacts:
                task.ClearField("artifacts")
            task.CopyFrom(apply_history_length(task, params))
        return page

    @validate_request_params
    async def on_cancel_task(self, params: CancelTaskRequest, context: ServerCallContext) -> Task:
        """``tasks/cancel``: a detached answer still running stops; a finished task is refused."""
        task = await self._stored(params.id, context)
        job = self._detached.get(task.id)
        if job is None or not job.cancel():
            raise TaskNotCancelableError
        await job
        return await self._stored(task.id, context)

    @validate_request_params
    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        """``tasks/resubscribe``: a detached answer's task, then its artifact and final status.

        A finished task is refused (A2A 3.1.6: there is nothing left to stream).
        """
        task = await self._stored(params.id, context)
        job = self._detached.get(task.id)
        if job is None:
            raise UnsupportedOperationError(message=f"Task {task.id} is in terminal state")
        yield task
        # Shielded: a subscriber that leaves does not stop the answer.
        finished = await asyncio.shield(job)
        if finished.status.state == TaskState.TASK_STATE_COMPLETED:
            yield TaskArtifactUpdateEvent(
                task_id=task.id, context_id=task.context_id, artifact=finished.artifacts[-1]
            )
        yield TaskStatusUpdateEvent(
            task_id=task.id, context_id=task.context_id, status=finished.status
        )

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Refused: no push notifications."""
        raise PushNotificationNotSupportedError(message=NO_PUSH)

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        """Refused: no push notifications."""
        raise PushNotificationNotSupportedError(message=NO_PUSH)

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        """Refused: no push notifications."""
        raise PushNotificationNotSupportedError(message=NO_PUSH)

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        """Refused: no push notifications."""
        raise PushNotificationNotSupportedError(message=NO_PUSH)

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        """Refused: the card is public and there is no other."""
        raise UnsupportedOperationError(
            message="The agent does not support authenticated extended cards"
        )
