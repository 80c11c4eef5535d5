"""The store interface: what the retrieval core needs from Qdrant, and nothing more.

Two backends implement it: ``embedded`` in :mod:`.edge` (qdrant-edge, Qdrant's engine in-process)
and ``server`` in :mod:`.server` (qdrant-client against a Qdrant server, or its local mode in
tests). They only translate these calls to their client; collection naming, versioning,
batching, fusion and ranking live above, in code both backends share.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol

import numpy as np

from services.retrieval.types import (
    DENSE,
    NO_PAYLOAD,
    SPARSE,
    CollectionSpec,
    Hit,
    Point,
    PointId,
    Scored,
    SparseVector,
    VectorQuery,
    id_key,
)

Fusion = Literal["rrf", "dbsf"]


def hit_from_point(p: Any) -> Hit:
    """A point or record of either client (same attribute names) as a :class:`Hit`."""
    dense = p.vector.get(DENSE) if isinstance(p.vector, dict) else None
    return Hit(
        id_key(p.id),
        float(getattr(p, "score", 0.0)),
        dict(p.payload) if p.payload else NO_PAYLOAD,
        # Packed at once: a page of points as Python floats is ~24 bytes a number.
        np.asarray(dense, dtype=np.float32) if dense is not None else None,
    )


def scored_from_points(points: Sequence[Any], with_sparse: bool) -> Scored:
    """A search's scored points of either client (same attribute names) as :class:`Scored`.

    Ids as the caller gave them (:func:`~services.retrieval.types.id_key`); documents are
    numbered, so most ids are ints already and pass through.
    """
    ids = [id_key(p.id) for p in points]
    scores = [p.score for p in points]
    if not with_sparse:
        return Scored(ids, scores)
    sparse = []
    for p in points:
        found = p.vector.get(SPARSE) if isinstance(p.vector, dict) else None
        sparse.append(SparseVector(list(found.indices), list(found.values)) if found else None)
    return Scored(ids, scores, sparse)


class StoreError(RuntimeError):
    """The store is unreachable or refused an operation."""


class Store(Protocol):
    """What both backends provide. Collection names are concrete; aliases point at them."""

    def collection_exists(self, name: str) -> bool:
        """Whether a concrete collection exists."""
        ...

    def create_collection(self, name: str, spec: CollectionSpec) -> None:
        """Create an empty collection."""
        ...

    def delete_collection(self, name: str) -> None:
        """Drop a collection (no error if absent)."""
        ...

    def list_collections(self) -> list[str]:
        """Names of the concrete collections."""
        ...

    def upsert(self, name: str, points: Sequence[Point]) -> None:
        """Insert or replace points by id."""
        ...

    def optimize(self, name: str) -> None:
        """Index a collection once it is written; blocks until the index is built.

        Its dense vectors get an HNSW graph from the settings' threshold of points on; below
        it they are searched exactly.
        """
        ...

    def count(self, name: str) -> int:
        """Number of points."""
        ...

    def search(self, name: str, queries: Sequence[VectorQuery]) -> list[Scored]:
        """Run several queries at once; one ranked list of ids and scores per query.

        A search reads no payload: what a ranking shows of its few best documents is read by
        id (:meth:`retrieve`) or kept in memory.
        """
        ...

    def fused_search(
        self, name: str, prefetch: Sequence[VectorQuery], fusion: Fusion, limit: int
    ) -> list[Hit]:
        """Prefetch candidates with each query and fuse them inside Qdrant."""
        ...

    def score_points(
        self,
        name: str,
        vector: Sequence[float],
        ids: Sequence[PointId],
        payload: Sequence[str] | bool,
    ) -> list[Hit]:
        """The points ``ids`` (those that exist) with their dense score for ``vector`` and payload.

        One call, whatever the collection's size: the search is restricted to those points.
        """
        ...

    def retrieve(
        self,
        name: str,
        ids: Sequence[PointId],
        payload: Sequence[str] | bool = True,
        vectors: bool = False,
    ) -> list[Hit]:
        """Points with full payload, in the order of ``ids`` (missing ids are skipped).

        ``vectors`` returns each point's dense vector too (``Hit.dense``).
        """
        ...

    def scroll(
        self, name: str, payload: Sequence[str] | bool, page: int = 1000, vectors: bool = False
    ) -> list[Hit]:
        """Every point of the collection (small collections only), in pages of ``page``.

        ``vectors`` returns each point's dense vector too (``Hit.dense``).
        """
        ...

    def set_alias(self, alias: str, name: str) -> None:
        """Point ``alias`` at collection ``name`` atomically."""
        ...

    def resolve_alias(self, alias: str) -> str | None:
        """The collection ``alias`` points at, if any."""
        ...

    def close(self) -> None:
        """Release files and connections."""
        ...
