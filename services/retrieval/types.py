"""The retrieval core's shared vocabulary: what every layer above speaks, defined once.

Points, hits and sparse vectors as the store takes and gives them, a query as both retrievers
see it, a ranked document, and the static facts the ranker reads about a document. A result
takes one shape per hop: a search of the store answers :class:`Scored` (a ranked list's ids and
scores), a read answers :class:`Hit` (a point with its payload), and the ranking answers
:class:`RankedDocument` (a document), which the MCP server puts on the wire as it is. Nothing
here imports any other retrieval module: the store, the encoders, query-time ranking and
index-time building all stand on it.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import lru_cache
from types import MappingProxyType
from typing import Any, NamedTuple, TypedDict

import numpy as np
import numpy.typing as npt

DENSE = "dense"
NO_PAYLOAD: Mapping[str, Any] = MappingProxyType({})  # shared, so read-only
SPARSE = "bm25"
# Fixed namespace: the same key gives the same point id in every collection and every run,
# which is what makes re-indexing idempotent.
POINT_NAMESPACE = uuid.UUID("6f1d3c2e-8a4b-4e1f-9c7d-2b5a0e9f4c31")

#: A point's id as Qdrant takes it: an unsigned integer or a UUID's text. Documents are
#: numbered (a search returns hundreds of them, and the engine's binding builds a ``uuid.UUID``
#: object for every UUID id it returns); voting queries and the ranker have uuid5 ids.
PointId = int | str


@lru_cache(maxsize=65536)
def point_id(key: str) -> str:
    """Deterministic point id (uuid5) of a key such as ``knn:<query id>``."""
    return str(uuid.uuid5(POINT_NAMESPACE, key))


def id_key(raw: object) -> PointId:
    """A point id as either client returns it (int, str or ``uuid.UUID``), as :data:`PointId`."""
    return raw if isinstance(raw, int) else str(raw)


@dataclass(frozen=True, slots=True)
class SparseVector:
    """Indices and values of a sparse vector, indices unique."""

    indices: list[int]
    values: list[float]


@dataclass(frozen=True, slots=True)
class CollectionSpec:
    """Vectors a collection holds: one dense vector and optionally one sparse vector.

    ``small`` marks a collection that does not grow with the corpus (one point or a few
    thousand, read whole or by every search): a Qdrant server keeps it in one shard with a copy
    on every node, where the documents are sharded.
    """

    dense_size: int
    sparse: bool = True
    small: bool = False


@dataclass(frozen=True, slots=True)
class Point:
    """One point to upsert."""

    id: PointId
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
    #: Score every point: no HNSW graph and no quantized vectors (a sparse search is exact
    #: either way). For measuring the approximate search against; collections below the HNSW
    #: threshold are searched exactly without it.
    exact: bool = False

    @property
    def using(self) -> str:
        """The named vector the query runs on."""
        return SPARSE if isinstance(self.vector, SparseVector) else DENSE


class Hit(NamedTuple):
    """A point the store read, or found by fusion inside Qdrant: its id, score and payload.

    A named tuple, not a dataclass: a query converts a few hundred points, and a tuple is built
    faster than a frozen dataclass.
    """

    id: PointId
    score: float
    payload: Mapping[str, Any] = NO_PAYLOAD
    # Only when asked for (``Store.scroll(vectors=True)``).
    dense: npt.NDArray[np.float32] | None = None


class Scored(NamedTuple):
    """One query's answer from a search of the store: point ids and their scores, best first.

    Columns, not one object per point: a query's searches return a few hundred points, and every
    reader takes them as columns (numbered into arrays in one call, or zipped). ``sparse`` holds
    each point's sparse vector (None where it has none) when the query asked for them
    (``VectorQuery.with_sparse``), else it is None.
    """

    ids: list[PointId]
    scores: list[float]
    sparse: list[SparseVector | None] | None = None


class RankedDocument(TypedDict):
    """One document of a ranking, best first: what the retrieval core answers a search with.

    A plain dict of the wire's fields, built once per answer: the MCP server sends it as it is
    (``services.mcp_server.schemas.SearchHit`` is its published schema, with the same keys).
    """

    doc_id: str
    score: float
    title: str
    text: str


@dataclass(frozen=True, slots=True)
class EncodedQuery:
    """A query as both retrievers see it, with its text and its analyzed terms.

    The terms are analyzed once: the sparse vector counts them, the ranker's lexical features
    read them.
    """

    dense: list[float]
    sparse: SparseVector
    text: str
    terms: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class DocInfo:
    """Query-independent features of a document, loaded once per index version.

    ``title_terms`` are the analyzed title's terms in order (repeats kept: BM25 counts them);
    ``text_length`` is the analyzed abstract's length in terms.
    """

    title_terms: tuple[str, ...]
    train_votes: int
    text_length: int = 0
