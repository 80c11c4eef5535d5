"""An in-memory task store that forgets the oldest tasks beyond a bound.

The SDK's ``InMemoryTaskStore`` keeps every task for the life of the process; an agent answering
thousands of queries an hour would grow without limit. Tasks here finish within seconds and are
rarely fetched again, so keeping the most recent ``max_tasks`` is enough.
"""

from __future__ import annotations

from collections import OrderedDict

from a2a.server.context import ServerCallContext
from a2a.server.tasks import InMemoryTaskStore
from a2a.types import Task


class BoundedTaskStore(InMemoryTaskStore):
    """``InMemoryTaskStore`` holding at most ``max_tasks`` tasks (oldest first out)."""

    def __init__(self, max_tasks: int) -> None:
        super().__init__()
        self._max_tasks = max_tasks
        self._order: OrderedDict[str, ServerCallContext] = OrderedDict()

    async def save(self, task: Task, context: ServerCallContext) -> None:
        """Save ``task`` and drop the oldest tasks beyond the bound."""
        await super().save(task, context)
        self._order[task.id] = context
        self._order.move_to_end(task.id)
        while len(self._order) > self._max_tasks:
            old_id, old_context = self._order.popitem(last=False)
            await super().delete(old_id, old_context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Delete ``task_id``."""
        self._order.pop(task_id, None)
        await super().delete(task_id, context)
