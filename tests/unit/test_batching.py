"""The batchers: a lone query goes at once; queries that wait together share a pass.

The pass here records what it is given and can be held open, so a test decides which queries
arrive while a pass runs (real encodings and rankings are checked in
tests/integration/test_pipeline.py, through the server in tests/integration/test_encode_batching.py).
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Sequence

import anyio
import pytest

from services.mcp_server.batching import EncodeBatcher, PassBatcher
from services.retrieval.types import EncodedQuery, SparseVector


class Passes:
    """A model pass that records its queries; ``hold`` keeps the next pass open until released."""

    def __init__(self) -> None:
        self.seen: list[list[str]] = []
        self.hold = threading.Event()
        self.hold.set()
        self.entered = threading.Event()
        self.fail = False

    def __call__(self, texts: Sequence[str]) -> list[EncodedQuery]:
        self.seen.append(list(texts))
        self.entered.set()
        self.hold.wait(10)
        if self.fail:
            raise RuntimeError("model failed")
        return [EncodedQuery([float(len(t))], SparseVector([], []), t, ()) for t in texts]


def _batcher(passes: Passes, max_batch: int = 8) -> EncodeBatcher:
    return EncodeBatcher(passes, anyio.CapacityLimiter(2), max_batch)


async def _entered(passes: Passes) -> None:
    """Wait until a pass has started (it set ``entered`` in its thread)."""
    assert await anyio.to_thread.run_sync(passes.entered.wait, 10)
    passes.entered.clear()


async def test_a_lone_query_is_encoded_alone_at_once() -> None:
    passes = Passes()
    batcher = _batcher(passes)
    encoded = await batcher.encode("soy")
    assert encoded.text == "soy" and passes.seen == [["soy"]]
    assert (batcher.passes, batcher.encoded) == (1, 1)


async def test_queries_that_arrive_during_a_pass_share_the_next_one() -> None:
    passes = Passes()
    passes.hold.clear()
    batcher = _batcher(passes, max_batch=3)
    first = asyncio.create_task(batcher.encode("q0"))
    await _entered(passes)  # q0's pass runs; these five wait
    rest = [asyncio.create_task(batcher.encode(f"q{i}")) for i in range(1, 6)]
    await asyncio.sleep(0)  # the new tasks run up to their wait for a pass
    passes.hold.set()
    encoded = await asyncio.gather(first, *rest)
    assert [e.text for e in encoded] == [f"q{i}" for i in range(6)]  # each caller its own
    assert passes.seen == [["q0"], ["q1", "q2", "q3"], ["q4", "q5"]]  # at most max_batch


async def test_a_caller_gone_before_its_pass_is_left_out() -> None:
    passes = Passes()
    passes.hold.clear()
    batcher = _batcher(passes)
    first = asyncio.create_task(batcher.encode("q0"))
    await _entered(passes)
    gone = asyncio.create_task(batcher.encode("gone"))
    kept = asyncio.create_task(batcher.encode("kept"))
    await asyncio.sleep(0)  # the new tasks run up to their wait for a pass
    gone.cancel()
    passes.hold.set()
    await first
    assert (await kept).text == "kept"
    assert passes.seen == [["q0"], ["kept"]]


async def test_a_failed_pass_fails_each_of_its_callers_and_the_next_pass_runs() -> None:
    passes = Passes()
    passes.hold.clear()
    batcher = _batcher(passes)
    first = asyncio.create_task(batcher.encode("q0"))
    await _entered(passes)
    passes.fail = True
    both = [asyncio.create_task(batcher.encode(q)) for q in ("a", "b")]
    await asyncio.sleep(0)  # the new tasks run up to their wait for a pass
    passes.hold.set()
    for task in (first, *both):
        with pytest.raises(RuntimeError, match="model failed"):
            await task
    passes.fail = False
    assert (await batcher.encode("after")).text == "after"


def test_a_batch_needs_room_for_one_query() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        _batcher(Passes(), max_batch=0)


async def test_idle_until_a_pass_runs_and_an_encode_here_counts_as_a_pass_of_one() -> None:
    passes = Passes()
    batcher = _batcher(passes)
    assert batcher.idle
    assert batcher.encode_here("alone").text == "alone"
    assert (batcher.passes, batcher.encoded, passes.seen) == (1, 1, [["alone"]])
    passes.hold.clear()
    running = asyncio.create_task(batcher.encode("q0"))
    await _entered(passes)
    assert not batcher.idle
    passes.hold.set()
    await running
    assert batcher.idle


CALLER: contextvars.ContextVar[str] = contextvars.ContextVar("caller", default="nobody")


class Ranks:
    """A pass of any work: records its items, the caller whose context it ran in, how many ran
    at once; ``hold`` keeps passes open until released."""

    def __init__(self) -> None:
        self.seen: list[list[str]] = []
        self.contexts: list[str] = []
        self.hold = threading.Event()
        self.entered = threading.Semaphore(0)
        self.lock = threading.Lock()
        self.running = self.most = 0

    def __call__(self, items: Sequence[str]) -> list[str]:
        with self.lock:
            self.seen.append(list(items))
            self.contexts.append(CALLER.get())
            self.running += 1
            self.most = max(self.most, self.running)
        self.entered.release()
        self.hold.wait(10)
        with self.lock:
            self.running -= 1
        return [f"ranked {i}" for i in items]


async def _submit(batcher: PassBatcher[str, str], item: str) -> str:
    CALLER.set(item)  # this task's context, as a request's trace would be
    return await batcher.submit(item)


async def test_up_to_max_passes_run_at_once_and_the_rest_share_the_next() -> None:
    ranks = Ranks()
    batcher: PassBatcher[str, str] = PassBatcher(ranks, anyio.CapacityLimiter(2), 8, 0.0, 2)
    first = []
    for q in ("a", "b"):  # a pass each, both running
        first.append(asyncio.create_task(_submit(batcher, q)))
        assert await anyio.to_thread.run_sync(ranks.entered.acquire, True, 10)
    rest = [asyncio.create_task(_submit(batcher, q)) for q in ("c", "d", "e")]
    await asyncio.sleep(0)  # they wait: no third pass
    assert ranks.seen == [["a"], ["b"]]
    ranks.hold.set()
    results = await asyncio.gather(*first, *rest)
    assert results == [f"ranked {q}" for q in "abcde"]
    assert ranks.most == 2 and sorted(map(len, ranks.seen)) == [1, 1, 3]
    # Each pass ran in the context of its first caller: a trace, not the runner's.
    assert ranks.contexts[:2] == ["a", "b"] and ranks.contexts[2] == "c"
    assert (batcher.passes, batcher.items) == (3, 5) and batcher.idle


def test_at_least_one_pass_at_a_time() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        PassBatcher(Ranks(), anyio.CapacityLimiter(1), 8, 0.0, 0)
