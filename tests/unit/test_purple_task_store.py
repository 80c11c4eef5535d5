"""The purple agent's bounded in-memory task store."""

from __future__ import annotations

from a2a.server.context import ServerCallContext
from a2a.types import Task, TaskState, TaskStatus

from services.purple_agent.task_store import BoundedTaskStore


def _task(task_id: str) -> Task:
    return Task(id=task_id, context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_COMPLETED))


async def test_the_oldest_tasks_are_dropped_beyond_the_bound() -> None:
    store, context = BoundedTaskStore(max_tasks=2), ServerCallContext()
    for task_id in ("t1", "t2", "t3"):
        await store.save(_task(task_id), context)
    assert await store.get("t1", context) is None
    assert [(await store.get(t, context)) is not None for t in ("t2", "t3")] == [True, True]


async def test_saving_again_refreshes_a_task_and_delete_forgets_it() -> None:
    store, context = BoundedTaskStore(max_tasks=2), ServerCallContext()
    await store.save(_task("t1"), context)
    await store.save(_task("t2"), context)
    await store.save(_task("t1"), context)  # t1 is now the newest
    await store.save(_task("t3"), context)
    assert await store.get("t2", context) is None
    assert await store.get("t1", context) is not None
    await store.delete("t1", context)
    await store.save(_task("t4"), context)
    assert await store.get("t3", context) is not None
