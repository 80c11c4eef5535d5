"""What the learned ranker looks at for one query: ranked lists from Qdrant's retrievers.

``mode=full`` keeps the dense, BM25 and RM3-expanded lists apart, with the nearest voting queries,
as the ranker's :class:`Evidence`, gathered in three store calls (:func:`gather`). Documents are
known by their point ids, numbers that order them as their doc ids do, so every signal after it
reads arrays.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from services.retrieval.query.feedback import expand_from_first_pass
from services.retrieval.settings import FeedbackSettings
from services.retrieval.store.base import Store, StoreError
from services.retrieval.types import EncodedQuery, PointId, Scored, VectorQuery
from services.telemetry.tracing import stage, tracer

_tracer = tracer(__name__)

#: (voting query id, similarity), nearest first.
Ranked = list[tuple[str, float]]


@dataclass(frozen=True, slots=True)
class RankedDocs:
    """One retriever's documents, best first: their point ids, and scores.

    Documents are numbered as the store answers: every signal after it reads arrays, and doc
    ids are spelled out only for the few documents a query returns.
    """

    points: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]

    def __len__(self) -> int:
        """Number of documents."""
        return len(self.points)


NO_DOCS = RankedDocs(np.zeros(0, dtype=np.int64), np.zeros(0))


@dataclass(frozen=True, slots=True)
class Evidence:
    """Ranked lists for one query: documents by column, and the nearest voting queries by id."""

    dense: RankedDocs
    bm25: RankedDocs
    rm3: RankedDocs
    neighbours: Ranked


def _numbered(found: Scored) -> RankedDocs:
    # Payloads stay in Qdrant: documents are known by their numbers, which spares converting
    # hundreds of payloads per query.
    if not all(isinstance(i, int) for i in found.ids):
        raise StoreError("documents without numbered point ids: an older index schema, rebuild it")
    return RankedDocs(np.array(found.ids, dtype=np.int64), np.array(found.scores, dtype=np.float64))


def named(found: Scored, names: Mapping[PointId, str]) -> Ranked:
    """The voting queries of a search of their collection, by id (points not named are left out)."""
    return [
        (names[i], score) for i, score in zip(found.ids, found.scores, strict=True) if i in names
    ]


@dataclass(frozen=True, slots=True)
class Depths:
    """How much evidence to gather: ranked-list depth, RM3 settings, voting neighbours."""

    candidates: int
    feedback: FeedbackSettings
    neighbours: int


def gather(
    store: Store,
    collection: str,
    knn: str | None,
    q: EncodedQuery,
    depths: Depths,
    names: Mapping[PointId, str],
    exclude_query: str | None = None,
) -> Evidence:
    """Everything the learned ranker looks at for one query, gathered from Qdrant in three calls.

    1. the documents collection: dense top-N, BM25 top-N, and the BM25 top feedback documents
       with their sparse vectors, in one batch;
    2. the documents collection again: BM25 with the RM3-expanded query;
    3. the voting-query collection ``knn``: the nearest voting queries (ids and similarities;
       their judgements are read once per index version, :mod:`.judgements`).

    ``knn`` None skips the third (zero-shot); ``names`` maps voting queries' point ids to their
    ids. Training and serving gather alike; only ``exclude_query`` differs, which drops a
    voting query from its own neighbours (leave-one-out), or it would vote for its own answers
    and the ranker would learn to trust votes far more than they deserve.
    """
    (evidence,) = gather_many(store, collection, knn, [q], depths, names, [exclude_query])
    return evidence


def gather_many(
    store: Store,
    collection: str,
    knn: str | None,
    queries: Sequence[EncodedQuery],
    depths: Depths,
    names: Mapping[PointId, str],
    exclude: Sequence[str | None] | None = None,
) -> list[Evidence]:
    """:func:`gather` for several queries in the same three calls, each call one batch of all.

    Every request in a batch is answered as if it were alone, so each query's evidence is the
    same as :func:`gather` gives it; ``exclude`` is each query's ``exclude_query``.
    """
    exclude = list(exclude) if exclude is not None else [None] * len(queries)
    depth, rm3_params = depths.candidates, depths.feedback
    batch: list[VectorQuery] = []
    shapes = []  # per query: where its lists start in the batch, lexical, feedback
    for q in queries:
        lexical = bool(q.sparse.indices)  # a query of stopwords only has no lexical side
        feedback = lexical and rm3_params.docs > 0
        shapes.append((len(batch), lexical, feedback))
        batch.append(VectorQuery(q.dense, depth))
        if lexical:
            batch.append(VectorQuery(q.sparse, depth))
        if feedback:
            batch.append(VectorQuery(q.sparse, rm3_params.docs, with_sparse=True))
    lists = store.search(collection, batch)
    dense = [_numbered(lists[at]) for at, _, _ in shapes]
    bm25 = [_numbered(lists[at + 1]) if lex else NO_DOCS for at, lex, _ in shapes]
    rm3 = list(bm25)
    fed = [i for i, (_, _, feedback) in enumerate(shapes) if feedback]
    if fed:
        with stage(_tracer, "rm3 feedback"):  # expansion, then its search
            expanded = [
                VectorQuery(
                    expand_from_first_pass(queries[i].sparse, lists[shapes[i][0] + 2], rm3_params),
                    depth,
                )
                for i in fed
            ]
            for i, found in zip(fed, store.search(collection, expanded), strict=True):
                rm3[i] = _numbered(found)
    neighbours: list[Ranked] = [[] for _ in queries]
    if knn is not None and queries:
        with stage(_tracer, "knn neighbours"):
            # One extra neighbour so that leaving the query itself out still leaves k.
            asks = [
                VectorQuery(q.dense, depths.neighbours + (1 if left_out else 0))
                for q, left_out in zip(queries, exclude, strict=True)
            ]
            neighbours = [named(found, names) for found in store.search(knn, asks)]
    return [Evidence(*fields) for fields in zip(dense, bm25, rm3, neighbours, strict=True)]
