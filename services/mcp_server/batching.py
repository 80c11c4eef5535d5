"""Queries that arrive together are encoded together: under load one model pass serves several.

A model pass over a batch costs far less per query than one pass per query (the figures are in
docs/performance.md), and a batch encodes each query to the same bits as encoding it alone. No
request waits for company it does not have: the first query starts a pass at once (after at most
``max_wait_s``, 0 by default), and whatever arrives while a pass runs forms the next one, up to
``max_batch`` queries. A lone query is therefore encoded as before; queueing, not a timer, is
what makes batches under load. A caller that finds the batcher idle and a thread free may
encode in the thread it ranks in (:meth:`EncodeBatcher.encode_here`): one hand-off to a thread
instead of two.

A caller that has gone before its pass starts is left out of it.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable, Sequence

import anyio

from services.mcp_server.metrics import ENCODE_BATCH
from services.retrieval.types import EncodedQuery

EncodeMany = Callable[[Sequence[str]], list[EncodedQuery]]


class EncodeBatcher:
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
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._encode_many = encode_many
        self._limiter = limiter
        self._max_batch = max_batch
        self._max_wait_s = max_wait_s
        self._waiting: list[tuple[str, asyncio.Future[EncodedQuery]]] = []
        self._running = False
        self._task: asyncio.Task[None] | None = None
        self._count_lock = threading.Lock()
        self.passes = 0  # model passes made, for the tests
        self.encoded = 0  # queries encoded in them

    @property
    def idle(self) -> bool:
        """No pass runs and nobody waits: a query now would be encoded alone."""
        return not self._running and not self._waiting

    def encode_here(self, query: str) -> EncodedQuery:
        """Encode one query alone in the calling thread (a worker's), counted as a pass of one."""
        (encoded,) = self._encode_many([query])
        self._counted(1)
        return encoded

    def _counted(self, queries: int) -> None:
        with self._count_lock:
            self.passes += 1
            self.encoded += queries
        ENCODE_BATCH.observe(queries)

    async def encode(self, query: str) -> EncodedQuery:
        """The query's encoding, from the next model pass."""
        future: asyncio.Future[EncodedQuery] = asyncio.get_running_loop().create_future()
        self._waiting.append((query, future))
        if not self._running:
            self._running = True
            # Held by the loop until it ends: the pass outlives any one caller.
            self._task = asyncio.create_task(self._passes())
        return await future

    async def _passes(self) -> None:
        try:
            while self._waiting:
                if self._max_wait_s > 0 and len(self._waiting) < self._max_batch:
                    await asyncio.sleep(self._max_wait_s)
                batch = [(q, f) for q, f in self._waiting[: self._max_batch] if not f.done()]
                del self._waiting[: self._max_batch]
                if batch:
                    await self._pass(batch)
        finally:
            self._running = False

    async def _pass(self, batch: list[tuple[str, asyncio.Future[EncodedQuery]]]) -> None:
        texts = [q for q, _ in batch]
        try:
            encoded = await anyio.to_thread.run_sync(
                self._encode_many, texts, limiter=self._limiter
            )
        except Exception as e:  # every caller of the pass gets the failure
            for _, future in batch:
                if not future.done():
                    future.set_exception(e)
            return
        self._counted(len(batch))
        for (_, future), result in zip(batch, encoded, strict=True):
            if not future.done():
                future.set_result(result)
