"""The direct A2A request handler on its own: what it keeps, what it refuses, what it cancels."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from a2a.auth.user import User
from a2a.helpers import new_text_part
from a2a.server.context import ServerCallContext
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    Artifact,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Role,
    SendMessageRequest,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError

from services.common.task_store import BoundedTaskStore
from services.purple_agent.a2a.handler import DirectRequestHandler, Failed

CARD = AgentCard(name="t", capabilities=AgentCapabilities(streaming=True))


class _Named(User):
    def __init__(self, name: str) -> None:
        self._name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def user_name(self) -> str:
        return self._name


def _request(text: str = "hello", task_id: str = "") -> SendMessageRequest:
    message = Message(
        role=Role.ROLE_USER,
        message_id=uuid.uuid4().hex,
        task_id=task_id,
        parts=[new_text_part(text)],
    )
    return SendMessageRequest(message=message)


async def _echo(message: Message) -> Artifact | Failed:
    text = message.parts[0].text
    return Failed(f"no: {text}") if text == "fail" else Artifact(parts=[new_text_part(text)])


async def test_a_kept_task_is_finished_without_its_history_and_cannot_continue() -> None:
    handler = DirectRequestHandler(_echo, CARD, BoundedTaskStore(10))
    alice = ServerCallContext(user=_Named("alice"))
    task = await handler.on_message_send(_request(), alice)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert task.status.HasField("timestamp")
    assert [m.parts[0].text for m in task.history] == ["hello"]
    assert task.artifacts[0].artifact_id  # one was given
    kept = await handler.on_get_task(GetTaskRequest(id=task.id), alice)
    assert kept.artifacts == task.artifacts and not kept.history
    with pytest.raises(TaskNotFoundError):  # another caller's task
        await handler.on_get_task(GetTaskRequest(id=task.id), ServerCallContext(user=_Named("b")))
    with pytest.raises(UnsupportedOperationError, match="terminal state"):
        await handler.on_message_send(_request(task_id=task.id), alice)
    with pytest.raises(TaskNotCancelableError):
        await handler.on_cancel_task(CancelTaskRequest(id=task.id), alice)


async def test_a_failure_is_the_final_status_message() -> None:
    handler = DirectRequestHandler(_echo, CARD, None)
    task = await handler.on_message_send(_request("fail"), ServerCallContext())
    assert task.status.state == TaskState.TASK_STATE_FAILED
    assert task.status.message.role == Role.ROLE_AGENT
    assert task.status.message.task_id == task.id
    assert [p.text for p in task.status.message.parts] == ["no: fail"]
    assert not task.artifacts


async def test_without_a_store_nothing_is_kept_or_read() -> None:
    handler = DirectRequestHandler(_echo, CARD, None)
    task = await handler.on_message_send(_request(), ServerCallContext())
    with pytest.raises(TaskNotFoundError):  # as any task the caller cannot see
        await handler.on_get_task(GetTaskRequest(id=task.id), ServerCallContext())
    assert not (await handler.on_list_tasks(ListTasksRequest(), ServerCallContext())).tasks


async def test_cancelling_the_request_cancels_the_answer() -> None:
    started, cancelled = asyncio.Event(), asyncio.Event()

    async def slow(message: Message) -> Artifact | Failed:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return Failed("late")

    handler = DirectRequestHandler(slow, CARD, None)
    request = asyncio.create_task(handler.on_message_send(_request(), ServerCallContext()))
    await started.wait()
    request.cancel()
    with pytest.raises(asyncio.CancelledError):
        await request
    assert cancelled.is_set()
