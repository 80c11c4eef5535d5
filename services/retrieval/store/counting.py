"""A :class:`~services.retrieval.store.base.Store` that counts the calls made through it.

The MCP server reports the count as ``qdrant_calls_total`` (the AgentBeats ``/health_check``):
one search makes several store calls (candidate searches, feedback, kNN, payloads), and the
counter shows each of them, readiness checks included. Calls come from worker threads, hence the
lock.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence

from services.retrieval.store.base import (
    CollectionSpec,
    Fusion,
    Hit,
    Point,
    Store,
    VectorQuery,
)


class CountingStore:
    """Delegates every call to ``inner`` and counts it."""

    def __init__(self, inner: Store) -> None:
        """Wrap ``inner``; the count starts at 0."""
        self._inner = inner
        self._lock = threading.Lock()
        self._calls = 0

    @property
    def calls(self) -> int:
        """Store calls since start-up or the last :meth:`reset`."""
        return self._calls

    def reset(self) -> None:
        """Start counting from 0 again."""
        with self._lock:
            self._calls = 0

    def _count(self) -> Store:
        with self._lock:
            self._calls += 1
        return self._inner

    def collection_exists(self, name: str) -> bool:
        """Counted :meth:`Store.collection_exists`."""
        return self._count().collection_exists(name)

    def create_collection(self, name: str, spec: CollectionSpec) -> None:
        """Counted :meth:`Store.create_collection`."""
        self._count().create_collection(name, spec)

    def delete_collection(self, name: str) -> None:
        """Counted :meth:`Store.delete_collection`."""
        self._count().delete_collection(name)

    def list_collections(self) -> list[str]:
        """Counted :meth:`Store.list_collections`."""
        return self._count().list_collections()

    def upsert(self, name: str, points: Sequence[Point]) -> None:
        """Counted :meth:`Store.upsert`."""
        self._count().upsert(name, points)

    def count(self, name: str) -> int:
        """Counted :meth:`Store.count`."""
        return self._count().count(name)

    def search(
        self, name: str, queries: Sequence[VectorQuery], payload: Sequence[str] | bool
    ) -> list[list[Hit]]:
        """Counted :meth:`Store.search` (one call, however many queries it batches)."""
        return self._count().search(name, queries, payload)

    def fused_search(
        self, name: str, prefetch: Sequence[VectorQuery], fusion: Fusion, limit: int
    ) -> list[Hit]:
        """Counted :meth:`Store.fused_search`."""
        return self._count().fused_search(name, prefetch, fusion, limit)

    def retrieve(
        self, name: str, ids: Sequence[str], payload: Sequence[str] | bool = True
    ) -> list[Hit]:
        """Counted :meth:`Store.retrieve`."""
        return self._count().retrieve(name, ids, payload)

    def scroll(self, name: str, payload: Sequence[str] | bool, page: int = 1000) -> list[Hit]:
        """Counted :meth:`Store.scroll` (one call, however many pages)."""
        return self._count().scroll(name, payload, page)

    def set_alias(self, alias: str, name: str) -> None:
        """Counted :meth:`Store.set_alias`."""
        self._count().set_alias(alias, name)

    def resolve_alias(self, alias: str) -> str | None:
        """Counted :meth:`Store.resolve_alias`."""
        return self._count().resolve_alias(alias)

    def close(self) -> None:
        """Close the inner store (not counted: nothing is asked of Qdrant)."""
        self._inner.close()
