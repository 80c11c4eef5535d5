"""The store interface: what the retrieval core needs from Qdrant, and nothing more.

Two backends implement it: :mod:`.edge` (qdrant-edge, the engine embedded in-process) and
:mod:`.server` (qdrant-client against a Qdrant server, or its local mode in tests). They only
translate these calls to their client; collection naming, versioning, batching, fusion and ranking
live above, in code both backends share.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any, Literal, NamedTuple, Protocol

DENSE = "dense"
NO_PAYLOAD: Mapping[str, Any] = MappingProxyType({})  # shared, so read-only
SPARSE = "bm25"
# Fixed namespace: the same doc id gives the same point id in every collection and every run,
# which is what makes re-indexing idempotent.
POINT_NAMESPACE = uuid.UUID("6f1d3c2e-8a4b-4e1f-9c7d-2b5a0e9f4c31")


@lru_cache(maxsize=65536)
def point_id(key: str) -> str:
    """Deterministic point id (uuid5) of a document or query id."""
    return str(uuid.uuid5(POINT_NAMESPACE, key))


@dataclass(frozen=True, slots=True)
class SparseVector:
    """Indices and values of a sparse vector, indices unique."""

    indices: list[int]
    values: list[float]


@dataclass(frozen=True, slots=True)
class CollectionSpec:
    """Vectors a collection holds: one dense vector and optionally one sparse vector."""

    dense_size: int
    sparse: bool = True


@dataclass(frozen=True, slots=True)
class Point:
    """One point to upsert."""

    id: str
    dense: Sequence[float]
    payload: dict[str, Any]
    sparse: SparseVector | None = None


@dataclass(frozen=True, slots=True)
class VectorQuery:
    """A nearest-neighbour query on one named vector."""

    vector: Sequence[float] | SparseVector
    limit: int
    #: Return each hit's sparse vector too (RM3 feedback reads the top documents' terms).
    with_sparse: bool = False

    @property
    def using(self) -> str:
        """The named vector the query runs on."""
        return SPARSE if isinstance(self.vector, SparseVector) else DENSE


class Hit(NamedTuple):
    """A scored point with (part of) its payload.

    A named tuple, not a dataclass: a query converts about 300 points, and a tuple is built in
    about half the time of a frozen dataclass.
    """

    id: str
    score: float
    payload: Mapping[str, Any] = NO_PAYLOAD
    sparse: SparseVector | None = None


Fusion = Literal["rrf", "dbsf"]


def hit_from_point(p: Any) -> Hit:
    """A scored point or record of either client (same attribute names) as a :class:`Hit`."""
    vectors = p.vector if isinstance(p.vector, dict) else {}
    sparse = vectors.get(SPARSE)
    return Hit(
        str(p.id),
        float(getattr(p, "score", 0.0)),
        dict(p.payload) if p.payload else NO_PAYLOAD,
        SparseVector(list(sparse.indices), list(sparse.values)) if sparse else None,
    )


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

    def count(self, name: str) -> int:
        """Number of points."""
        ...

    def search(
        self,
        name: str,
        queries: Sequence[VectorQuery],
        payload: Sequence[str] | bool,
    ) -> list[list[Hit]]:
        """Run several queries at once; one ranked list per query."""
        ...

    def fused_search(
        self, name: str, prefetch: Sequence[VectorQuery], fusion: Fusion, limit: int
    ) -> list[Hit]:
        """Prefetch candidates with each query and fuse them inside Qdrant."""
        ...

    def retrieve(
        self, name: str, ids: Sequence[str], payload: Sequence[str] | bool = True
    ) -> list[Hit]:
        """Points with full payload, in the order of ``ids`` (missing ids are skipped)."""
        ...

    def scroll(self, name: str, payload: Sequence[str] | bool, page: int = 1000) -> list[Hit]:
        """Every point of the collection (small collections only), in pages of ``page``."""
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
