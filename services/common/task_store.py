"""The A2A task store both our agents use: bounded in count, bytes and time, no request text.

The SDK's ``InMemoryTaskStore`` keeps every task, with the whole request message in its history,
for the life of the process: an agent answering thousands of queries an hour grows without limit,
and a task can be read back with the caller's text (the green agent's: participant URLs, and any
``user:pass@`` in them). Tasks here are kept without their history (the answer is the artifact),
for ``ttl_s`` after their last update, oldest dropped first, and within two bounds of count and
bytes. Each caller (the authenticated user; anonymous callers are one) has its own,
``max_tasks_per_caller`` and ``max_bytes_per_caller``: a caller past its own drops its own oldest
task, so no caller can push out another's. The whole store has ``max_tasks`` and ``max_bytes``,
which hold the memory whatever the number of callers: past them, the oldest task of the caller
holding the most goes, never one of a caller holding fewer than another. The SDK scopes tasks by
caller: each authenticated caller reads its own. With ``keep_finished`` off (no authentication: no caller to read a task back), a task
leaves the store as soon as it ends; the SDK holds a running one here while it works on it.

Without authentication every caller is the same anonymous one, so neither agent lets anyone read
a task back, and both say so as A2A lets a server say it of a task the caller may not see
(A2A 3.3.2, 13.1): ``GetTask`` answers task not found for any id (:func:`no_task`), ``ListTasks``
an empty page (:func:`empty_page`), each after checking its parameters as the SDK does with a
store (-32602 for a bad ``historyLength``, ``pageSize`` or ``pageToken``); and a send that asks
to return at once is refused (:func:`refuse_unreadable_send`): its answer could never be read.
"""

from __future__ import annotations

import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from a2a.server.context import ServerCallContext
from a2a.server.owner_resolver import resolve_user_scope
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import (
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    SendMessageRequest,
    Task,
    TaskState,
)
from a2a.utils.errors import TaskNotFoundError, UnsupportedOperationError
from a2a.utils.task import validate_history_length, validate_page_size
from prometheus_client import Gauge

#: The states a task does not leave.
TERMINAL = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)


@dataclass(frozen=True, slots=True)
class _Entry:
    context: ServerCallContext
    owner: str
    size: int
    saved_at: float


@dataclass(slots=True)
class _Holding:
    """One caller's tasks, oldest first, and their bytes."""

    tasks: OrderedDict[str, None]
    size: int = 0


@dataclass(frozen=True, slots=True)
class StoreGauges:
    """Where a store publishes what it keeps: its tasks and their serialized bytes."""

    tasks: Gauge
    bytes: Gauge


class BoundedTaskStore(InMemoryTaskStore):
    """``InMemoryTaskStore`` with bounds (see the module docstring); owner scoping unchanged."""

    def __init__(
        self,
        max_tasks: int,
        max_bytes: int = 16 << 20,
        ttl_s: float = 600.0,
        clock: Callable[[], float] = time.monotonic,
        *,
        max_tasks_per_caller: int | None = None,
        max_bytes_per_caller: int | None = None,
        keep_finished: bool = True,
        gauges: StoreGauges | None = None,
    ) -> None:
        """Bound the store (see the module docstring); a caller's bounds default to the store's."""
        super().__init__(owner_resolver=resolve_user_scope)
        self._max_tasks = max_tasks
        self._max_bytes = max_bytes
        self._caller_tasks = max_tasks_per_caller or max_tasks
        self._caller_bytes = max_bytes_per_caller or max_bytes
        self._callers: dict[str, _Holding] = {}
        self._ttl_s = ttl_s
        self._clock = clock
        self._keep_finished = keep_finished
        self._gauges = gauges
        self._entries: OrderedDict[str, _Entry] = OrderedDict()
        self._bytes = 0

    @property
    def stored_bytes(self) -> int:
        """Serialized size of the tasks kept."""
        return self._bytes

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Save ``task`` without its history, then drop what the bounds no longer allow."""
        if not self._keep_finished and task.status.state in TERMINAL:
            if task.id in self._entries:
                await self.delete(task.id, context)
            return
        kept = Task()
        kept.CopyFrom(task)
        kept.ClearField("history")
        await super().save(kept, context)
        self._forget(task.id)
        owner = resolve_user_scope(context)
        entry = _Entry(context, owner, kept.ByteSize(), self._clock())
        self._entries[task.id] = entry
        self._bytes += entry.size
        holding = self._callers.setdefault(owner, _Holding(OrderedDict()))
        holding.tasks[task.id] = None
        holding.size += entry.size
        await self._evict(holding)
        self._publish()

    async def get(self, task_id: str, context: ServerCallContext) -> Task | None:
        """The task, unless it has expired."""
        entry = self._entries.get(task_id)
        if entry is not None and self._clock() - entry.saved_at > self._ttl_s:
            await self.delete(task_id, entry.context)
            return None
        return await super().get(task_id, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Delete ``task_id``."""
        self._forget(task_id)
        await super().delete(task_id, context)
        self._publish()

    def _publish(self) -> None:
        # What operators (and the leak tests) read to see the bounds hold.
        if self._gauges is not None:
            self._gauges.tasks.set(len(self._entries))
            self._gauges.bytes.set(self._bytes)

    def _forget(self, task_id: str) -> None:
        entry = self._entries.pop(task_id, None)
        if entry is not None:
            self._bytes -= entry.size
            holding = self._callers[entry.owner]
            del holding.tasks[task_id]
            holding.size -= entry.size
            if not holding.tasks:
                del self._callers[entry.owner]

    async def _drop_oldest(self, holding: _Holding) -> None:
        task_id = next(iter(holding.tasks))
        await self.delete(task_id, self._entries[task_id].context)

    async def _evict(self, saver: _Holding) -> None:
        """Expired tasks, then the saver's beyond its bounds, then the biggest holder's."""
        now = self._clock()
        while self._entries:  # every task is saved at the end: the oldest come first
            task_id, oldest = next(iter(self._entries.items()))
            if now - oldest.saved_at <= self._ttl_s:
                break
            await self.delete(task_id, oldest.context)
        while saver.tasks and (
            len(saver.tasks) > self._caller_tasks or saver.size > self._caller_bytes
        ):
            await self._drop_oldest(saver)
        while len(self._entries) > self._max_tasks or self._bytes > self._max_bytes:
            # The caller holding the most, in what is over; on a tie the saver, then the first.
            by_count = len(self._entries) > self._max_tasks
            biggest = max(
                self._callers.values(),
                key=lambda h: (len(h.tasks) if by_count else h.size, h is saver),
            )
            await self._drop_oldest(biggest)


#: Why a send that asks to return at once is refused without authentication.
UNREADABLE_SEND = (
    "returnImmediately (in A2A 0.3, blocking: false) needs authentication on this agent: "
    "without it no task can be read back, so the answer would be lost; send the message "
    "without it to get the finished task in the answer"
)
#: Never written to: lists pages of no task, checking a page token as every store does.
_NO_TASKS = InMemoryTaskStore()


def refuse_unreadable_send(params: SendMessageRequest) -> None:
    """Refuse (-32004, unsupported) a send asking to return at once, where tasks are unreadable.

    A2A 3.2.2: such a send returns the task in progress, to be read later (``GetTask``, the
    stream, push); none of those reaches a task here. ``blocking: false`` of A2A 0.3 arrives as
    the same flag (the SDK converts it).
    """
    if params.configuration.return_immediately:
        raise UnsupportedOperationError(message=UNREADABLE_SEND)


def no_task(params: GetTaskRequest) -> NoReturn:
    """``GetTask`` where tasks are unreadable: its parameters checked, then task not found."""
    validate_history_length(params)
    raise TaskNotFoundError


async def empty_page(params: ListTasksRequest) -> ListTasksResponse:
    """``ListTasks`` where tasks are unreadable: its parameters checked, then an empty page."""
    validate_history_length(params)
    if params.HasField("page_size"):
        validate_page_size(params.page_size)
    return await _NO_TASKS.list(params, ServerCallContext())
