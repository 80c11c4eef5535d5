"""The bounded in-memory task store both agents use."""

from __future__ import annotations

from a2a.server.context import ServerCallContext
from a2a.types import Message, Part, Role, Task, TaskState, TaskStatus

from services.common.task_store import BoundedTaskStore
from tests.support.callers import caller


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


async def test_tasks_are_kept_without_the_request_text() -> None:
    store, context = BoundedTaskStore(max_tasks=10), ServerCallContext()
    task = _task("t1")
    task.history.append(Message(role=Role.ROLE_USER, message_id="m", parts=[Part(text="x" * 5000)]))
    await store.save(task, context)
    kept = await store.get("t1", context)
    assert kept is not None and len(kept.history) == 0
    assert store.stored_bytes < 200


async def test_the_bytes_bound_drops_the_oldest() -> None:
    store, context = BoundedTaskStore(max_tasks=100, max_bytes=500), ServerCallContext()
    for n in range(20):
        task = _task(f"t{n}")
        task.status.message.parts.append(Part(text="y" * 60))  # about 100 bytes each
        await store.save(task, context)
    assert store.stored_bytes <= 500
    assert await store.get("t0", context) is None and await store.get("t19", context) is not None


async def test_tasks_expire_after_their_ttl() -> None:
    now = [0.0]
    store = BoundedTaskStore(max_tasks=10, ttl_s=60, clock=lambda: now[0])
    context = ServerCallContext()
    await store.save(_task("old"), context)
    now[0] = 30.0
    await store.save(_task("young"), context)
    now[0] = 61.0
    assert await store.get("old", context) is None  # expired on read
    assert await store.get("young", context) is not None
    now[0] = 95.0
    await store.save(_task("new"), context)  # expired tasks also go when others are saved
    assert store.stored_bytes == (await store.get("new", context)).ByteSize()  # type: ignore[union-attr]


async def test_without_keep_finished_a_task_leaves_the_store_when_it_ends() -> None:
    # No authentication, no caller to read a task back: a running one is held for the SDK.
    store, context = BoundedTaskStore(max_tasks=10, keep_finished=False), ServerCallContext()
    running = Task(id="t1", context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_WORKING))
    await store.save(running, context)
    assert await store.get("t1", context) is not None
    for state in (TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED):
        await store.save(running, context)
        await store.save(Task(id="t1", context_id="c", status=TaskStatus(state=state)), context)
        assert await store.get("t1", context) is None and store.stored_bytes == 0
    await store.save(_task("t2"), context)  # finished when first saved: never kept
    assert await store.get("t2", context) is None


async def test_a_caller_past_its_bound_drops_its_own_oldest_never_another_s() -> None:
    store = BoundedTaskStore(max_tasks=5, max_tasks_per_caller=3)
    alice, bob, carol = caller("alice"), caller("bob"), caller("carol")
    await store.save(_task("a1"), alice)
    for n in range(5):
        await store.save(_task(f"b{n}"), bob)
    assert await store.get("a1", alice) is not None
    assert [await store.get(f"b{n}", bob) is not None for n in range(5)] == [False] * 2 + [True] * 3
    # Past the store's bound, the biggest holder's oldest goes: Bob's, not Alice's nor Carol's.
    for n in range(2):
        await store.save(_task(f"c{n}"), carol)
    assert await store.get("a1", alice) is not None and await store.get("c0", carol) is not None
    assert await store.get("b2", bob) is None and await store.get("b3", bob) is not None
