"""The direct A2A request handler on its own: what it keeps, what it refuses, what it cancels."""

from __future__ import annotations

import asyncio
import uuid

import pytest
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
    SubscribeToTaskRequest,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError, UnsupportedOperationError

from services.common.task_store import BoundedTaskStore
from services.purple_agent.a2a.handler import DirectRequestHandler, Failed
from tests.support.callers import caller

CARD = AgentCard(name="t", capabilities=AgentCapabilities(streaming=True))


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
    alice = caller("alice")
    task = await handler.on_message_send(_request(), alice)
    assert task.status.state == TaskState.TASK_STATE_COMPLETED
    assert task.status.HasField("timestamp")
    assert [m.parts[0].text for m in task.history] == ["hello"]
    assert task.artifacts[0].artifact_id  # one was given
    kept = await handler.on_get_task(GetTaskRequest(id=task.id), alice)
    assert kept.artifacts == task.artifacts and not kept.history
    with pytest.raises(TaskNotFoundError):  # another caller's task
        await handler.on_get_task(GetTaskRequest(id=task.id), caller("b"))
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


def _immediate(text: str = "hello") -> SendMessageRequest:
    request = _request(text)
    request.configuration.return_immediately = True
    return request


class _Gate:
    """An agent whose answers wait until :attr:`open` is set."""

    def __init__(self) -> None:
        self.open = asyncio.Event()
        self.cancelled = asyncio.Event()
        self.entered: asyncio.Queue[str] = asyncio.Queue()

    async def __call__(self, message: Message) -> Artifact | Failed:
        self.entered.put_nowait(message.task_id)
        try:
            await self.open.wait()
        except asyncio.CancelledError:
            self.cancelled.set()
            raise
        return Artifact(parts=[new_text_part(message.parts[0].text)])


async def test_returning_at_once_answers_working_and_the_task_finishes_later() -> None:
    gate = _Gate()
    handler = DirectRequestHandler(gate, CARD, BoundedTaskStore(10))
    alice = caller("alice")
    task = await handler.on_message_send(_immediate(), alice)
    assert task.status.state == TaskState.TASK_STATE_WORKING and not task.artifacts
    kept = await handler.on_get_task(GetTaskRequest(id=task.id), alice)
    assert kept.status.state == TaskState.TASK_STATE_WORKING
    stream = handler.on_subscribe_to_task(SubscribeToTaskRequest(id=task.id), alice)
    first = await anext(stream)
    gate.open.set()
    rest = [event async for event in stream]
    assert first.id == task.id and first.status.state == TaskState.TASK_STATE_WORKING
    assert [type(e).__name__ for e in rest] == ["TaskArtifactUpdateEvent", "TaskStatusUpdateEvent"]
    done = await handler.on_get_task(GetTaskRequest(id=task.id), alice)
    assert done.status.state == TaskState.TASK_STATE_COMPLETED
    assert done.artifacts[0].parts[0].text == "hello"
    with pytest.raises(UnsupportedOperationError, match="terminal state"):
        await anext(handler.on_subscribe_to_task(SubscribeToTaskRequest(id=task.id), alice))


async def test_a_detached_answer_can_be_cancelled_by_its_caller_only() -> None:
    gate = _Gate()
    handler = DirectRequestHandler(gate, CARD, BoundedTaskStore(10))
    alice = caller("alice")
    task = await handler.on_message_send(_immediate(), alice)
    with pytest.raises(TaskNotFoundError):
        await handler.on_cancel_task(CancelTaskRequest(id=task.id), ServerCallContext())
    cancelled = await handler.on_cancel_task(CancelTaskRequest(id=task.id), alice)
    assert cancelled.status.state == TaskState.TASK_STATE_CANCELED and gate.cancelled.is_set()
    with pytest.raises(TaskNotCancelableError):
        await handler.on_cancel_task(CancelTaskRequest(id=task.id), alice)


async def test_beyond_the_bound_a_send_waits_for_its_answer() -> None:
    gate = _Gate()
    handler = DirectRequestHandler(gate, CARD, BoundedTaskStore(10), max_detached=1)
    alice = caller("alice")
    first = await handler.on_message_send(_immediate(), alice)
    assert first.status.state == TaskState.TASK_STATE_WORKING
    second = asyncio.create_task(handler.on_message_send(_immediate(), alice))
    await gate.entered.get()
    await gate.entered.get()  # both answers are under way: the second in its own request
    assert not second.done()
    gate.open.set()
    assert (await second).status.state == TaskState.TASK_STATE_COMPLETED
    await handler.aclose()


async def test_without_a_store_returning_at_once_is_refused() -> None:
    handler = DirectRequestHandler(_echo, CARD, None)
    with pytest.raises(UnsupportedOperationError, match="needs authentication"):
        await handler.on_message_send(_immediate(), ServerCallContext())
