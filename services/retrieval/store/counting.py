"""A :class:`~services.retrieval.store.base.Store` that counts, times and traces its calls.

The MCP server reports the count as ``qdrant_calls_total`` (the AgentBeats ``/health_check``):
one search makes several store calls (candidate searches, feedback, kNN, payloads), and the
counter shows each of them, readiness checks included. Each call also gets a span
(``store.<operation>``) and is passed to ``observe`` (the server's per-call histogram), and the
time a thread spends in the store is summed, so that a search can tell its store time from its
ranking time. Calls come from worker threads, hence the lock and the thread-local sum.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from services.retrieval.store.base import Fusion, Store
from services.retrieval.types import CollectionSpec, Hit, Point, PointId, Scored, VectorQuery
from services.telemetry.tracing import stage, tracer

_tracer = tracer(__name__)
T = TypeVar("T")
#: ``observe(operation, seconds)`` of each store call.
Observer = Callable[[str, float], None]


class CountingStore:
    """Delegates every call to ``inner``, counting, timing and tracing it."""

    def __init__(self, inner: Store, observe: Observer | None = None) -> None:
        """Wrap ``inner``; the count starts at 0."""
        self._inner = inner
        self._observe = observe
        self._lock = threading.Lock()
        self._calls = 0
        self._thread = threading.local()

    @property
    def thread_seconds(self) -> float:
        """Seconds this thread has spent in store calls since its last :meth:`start_timing`."""
        return float(getattr(self._thread, "seconds", 0.0))

    def start_timing(self) -> None:
        """Start summing this thread's store time from 0 (at the start of a search)."""
        self._thread.seconds = 0.0

    def _call(self, operation: str, method: Callable[..., T], *args: Any) -> T:
        with self._lock:
            self._calls += 1
        started = time.perf_counter()
        with stage(_tracer, f"store.{operation}") as span:
            span.set_attribute("db.operation.name", operation)
            if args and isinstance(args[0], str):
                span.set_attribute("db.collection.name", args[0])
            try:
                return method(*args)
            finally:
                elapsed = time.perf_counter() - started
                self._thread.seconds = self.thread_seconds + elapsed
                if self._observe is not None:
                    self._observe(operation, elapsed)

    @property
    def calls(self) -> int:
        """Store calls since start-up or the last :meth:`reset`."""
        return self._calls

    def reset(self) -> None:
        """Start counting from 0 again."""
        with self._lock:
            self._calls = 0

    def collection_exists(self, name: str) -> bool:
        """Counted :meth:`Store.collection_exists`."""
        return self._call("collection_exists", self._inner.collection_exists, name)

    def create_collection(self, name: str, spec: CollectionSpec) -> None:
        """Counted :meth:`Store.create_collection`."""
        self._call("create_collection", self._inner.create_collection, name, spec)

    def optimize(self, name: str) -> None:
        """Counted :meth:`Store.optimize`."""
        self._call("optimize", self._inner.optimize, name)

    def delete_collection(self, name: str) -> None:
        """Counted :meth:`Store.delete_collection`."""
        self._call("delete_collection", self._inner.delete_collection, name)

    def list_collections(self) -> list[str]:
        """Counted :meth:`Store.list_collections`."""
        return self._call("list_collections", self._inner.list_collections)

    def upsert(self, name: str, points: Sequence[Point]) -> None:
        """Counted :meth:`Store.upsert`."""
        self._call("upsert", self._inner.upsert, name, points)

    def count(self, name: str) -> int:
        """Counted :meth:`Store.count`."""
        return self._call("count", self._inner.count, name)

    def search(self, name: str, queries: Sequence[VectorQuery]) -> list[Scored]:
        """Counted :meth:`Store.search` (one call, however many queries it batches)."""
        return self._call("search", self._inner.search, name, queries)

    def fused_search(
        self, name: str, prefetch: Sequence[VectorQuery], fusion: Fusion, limit: int
    ) -> list[Hit]:
        """Counted :meth:`Store.fused_search`."""
        return self._call("fused_search", self._inner.fused_search, name, prefetch, fusion, limit)

    def score_points(
        self,
        name: str,
        vector: Sequence[float],
        ids: Sequence[PointId],
        payload: Sequence[str] | bool,
    ) -> list[Hit]:
        """Counted :meth:`Store.score_points`."""
        return self._call("score_points", self._inner.score_points, name, vector, ids, payload)

    def retrieve(
        self,
        name: str,
        ids: Sequence[PointId],
        payload: Sequence[str] | bool = True,
        vectors: bool = False,
    ) -> list[Hit]:
        """Counted :meth:`Store.retrieve`."""
        return self._call("retrieve", self._inner.retrieve, name, ids, payload, vectors)

    def scroll(
        self, name: str, payload: Sequence[str] | bool, page: int = 1000, vectors: bool = False
    ) -> list[Hit]:
        """Counted :meth:`Store.scroll` (one call, however many pages)."""
        return self._call("scroll", self._inner.scroll, name, payload, page, vectors)

    def set_alias(self, alias: str, name: str) -> None:
        """Counted :meth:`Store.set_alias`."""
        self._call("set_alias", self._inner.set_alias, alias, name)

    def resolve_alias(self, alias: str) -> str | None:
        """Counted :meth:`Store.resolve_alias`."""
        return self._call("resolve_alias", self._inner.resolve_alias, alias)

    def close(self) -> None:
        """Close the inner store (not counted: nothing is asked of Qdrant)."""
        self._inner.close()
