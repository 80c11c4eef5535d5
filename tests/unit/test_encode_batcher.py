"""The encode batcher: a lone query is encoded at once; queries that wait together share a pass.

The model pass here records what it is given and can be held open, so a test decides which
queries arrive while a pass runs (real encodings are checked in tests/integration/test_pipeline.py).
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence

import anyio
import pytest

from services.mcp_server.batching import EncodeBatcher
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
