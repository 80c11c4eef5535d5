"""Work that arrives together is done together: under load one pass serves several searches.

Two stages of a search batch this way: the query's encoding (one model pass over the queries
waiting, far cheaper per query than one pass each: the figures are in docs/performance.md) and
its ranking (the searches of the queries waiting go to the store in the same calls and their
feature rows through one pass of the model). Either gives every query the same bits as alone.

No request waits for company it does not have: the first item starts a pass at once (after at
most ``max_wait_s``, 0 by default), and whatever arrives while passes run forms the next one, up
to ``max_batch`` items, with at most ``max_passes`` passes at once. A lone item is therefore
handled as before; queueing, not a timer, is what makes batches under load. A caller that finds
the encoder idle and a thread free may encode in the thread it ranks in
(:meth:`EncodeBatcher.encode_here`): one hand-off to a thread instead of two.

A caller that has gone before its pass starts is left out of it. A pass runs in the context
(trace, metrics' exemplars) of its first caller still waiting.
"""

from __future__ import annotations

import asyncio
import contextvars
import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

import anyio

from services.mcp_server.metrics import ENCODE_BATCH
from services.retrieval.types import EncodedQuery

T = TypeVar("T")
R = TypeVar("R")
EncodeMany = Callable[[Sequence[str]], list[EncodedQuery]]


class PassBatcher(Generic[T, R]):
    """Items that wait together go through ``work`` in one call, in a worker thread."""

    def __init__(
        self,
        work: Callable[[Sequence[T]], Sequence[R]],
        limiter: anyio.CapacityLimiter,
        max_batch: int,
        max_wait_s: float = 0.0,
        max_passes: int = 1,
        observe: Callable[[int], None] | None = None,
    ) -> None:
        """Run ``work`` (one result per item, in order) in threads of ``limiter``.

        At most ``max_batch`` items share a pass, its first item waiting ``max_wait_s`` for
        others; ``max_passes`` passes run at once; ``observe`` gets each pass's size.
        """
        if max_batch < 1 or max_passes < 1:
            raise ValueError("max_batch and max_passes must be at least 1")
        self._work = work
        self._limiter = limiter
        self._max_batch = max_batch
        self._max_wait_s = max_wait_s
        self._max_passes = max_passes
        self._observe = observe
        self._waiting: list[tuple[T, asyncio.Future[R], contextvars.Context]] = []
        self._runners: set[asyncio.Task[None]] = set()  # held until each ends
        self._count_lock = threading.Lock()
        self.passes = 0  # passes made, for the tests
        self.items = 0  # items handled in them

    @property
    def idle(self) -> bool:
        """No pass runs and nobody waits: an item now would go alone."""
        return not self._runners and not self._waiting

    async def submit(self, item: T) -> R:
        """The item's result, from the next pass."""
        future: asyncio.Future[R] = asyncio.get_running_loop().create_future()
        self._waiting.append((item, future, contextvars.copy_context()))
        if len(self._runners) < self._max_passes:
            self._runners.add(asyncio.create_task(self._run()))
        return await future

    def counted(self, items: int) -> None:
        """Count one pass of ``items``."""
        with self._count_lock:
            self.passes += 1
            self.items += items
        if self._observe is not None:
            self._observe(items)

    async def _run(self) -> None:
        try:
            while self._waiting:
                if self._max_wait_s > 0 and len(self._waiting) < self._max_batch:
                    await asyncio.sleep(self._max_wait_s)
                batch = [w for w in self._waiting[: self._max_batch] if not w[1].done()]
                del self._waiting[: self._max_batch]
                if batch:
                    await self._pass(batch)
        finally:
            # Not idle until the last runner has stopped looking for work.
            runner = asyncio.current_task()
            if runner is not None:
                self._runners.discard(runner)

    async def _pass(self, batch: list[tuple[T, asyncio.Future[R], contextvars.Context]]) -> None:
        items = [item for item, _, _ in batch]
        context = batch[0][2]
        try:
            results = await anyio.to_thread.run_sync(
                context.run, self._work, items, limiter=self._limiter
            )
        except Exception as e:  # every caller of the pass gets the failure
            for _, future, _ in batch:
                if not future.done():
                    future.set_exception(e)
            return
        self.counted(len(batch))
        for (_, future, _), result in zip(batch, results, strict=True):
            if not future.done():
                future.set_result(result)


class EncodeBatcher(PassBatcher[str, EncodedQuery]):
    """Encodes the queries waiting at once, one model pass at a time, in a worker thread."""

    def __init__(
        self,
        encode_many: EncodeMany,
        limiter: anyio.CapacityLimiter,
        max_batch: int,
        max_wait_s: float = 0.0,
    ) -> None:
        """Encode through ``encode_many`` in threads of ``limiter``.

        At most ``max_batch`` queries share a pass; its first query waits ``max_wait_s`` for others.
        """
        super().__init__(encode_many, limiter, max_batch, max_wait_s, 1, ENCODE_BATCH.observe)

    @property
    def encoded(self) -> int:
        """Queries encoded, alone or in passes."""
        return self.items

    async def encode(self, query: str) -> EncodedQuery:
        """The query's encoding, from the next model pass."""
        return await self.submit(query)

    def encode_here(self, query: str) -> EncodedQuery:
        """Encode one query alone in the calling thread (a worker's), counted as a pass of one."""
        (encoded,) = self._work([query])
        self.counted(1)
        return encoded
