"""Everything the learned ranker looks at for one query, gathered from Qdrant in three calls.

1. the documents collection: dense (MiniLM) top-N, BM25 top-N, and the BM25 top feedback documents
   with their sparse vectors, in one batch;
2. the documents collection again: BM25 with the RM3-expanded query;
3. the training-query collection: the nearest training queries and their judgements.

Training and serving call :func:`gather` alike; the only difference is ``exclude_query``, which
drops a training query from its own neighbours (leave-one-out), or it would vote for its own
answers and the ranker would learn to trust votes far more than they deserve.
"""

from __future__ import annotations

from dataclasses import dataclass

from services.retrieval.feedback import FeedbackParams, expand
from services.retrieval.search import EncodedQuery
from services.retrieval.settings import RetrievalSettings
from services.retrieval.store.base import Hit, Store, VectorQuery

LIST_PAYLOAD = ["doc_id"]


@dataclass(frozen=True, slots=True)
class Evidence:
    """Ranked lists for one query (each hit's payload holds at least ``doc_id``)."""

    dense: list[Hit]
    bm25: list[Hit]
    rm3: list[Hit]
    neighbours: list[Hit]


def gather(
    store: Store,
    docs: str,
    knn: str | None,
    q: EncodedQuery,
    settings: RetrievalSettings,
    exclude_query: str | None = None,
) -> Evidence:
    """Collect the lists; ``knn`` None skips the collaborative signal (zero-shot)."""
    depth = settings.candidates
    batch = [VectorQuery(q.dense, depth)]
    lexical = bool(q.sparse.indices)  # a query of stopwords only has no lexical side
    feedback = lexical and settings.feedback_docs > 0
    if lexical:
        batch.append(VectorQuery(q.sparse, depth))
    if feedback:
        batch.append(VectorQuery(q.sparse, settings.feedback_docs, with_sparse=True))
    lists = store.search(docs, batch, payload=LIST_PAYLOAD)
    dense = lists[0]
    bm25 = lists[1] if lexical else []
    rm3 = bm25
    if feedback:
        params = FeedbackParams(
            settings.feedback_docs, settings.feedback_terms, settings.feedback_weight
        )
        expanded = expand(q.sparse, [(h.score, h.sparse) for h in lists[2] if h.sparse], params)
        (rm3,) = store.search(docs, [VectorQuery(expanded, depth)], payload=LIST_PAYLOAD)
    neighbours: list[Hit] = []
    if knn is not None:
        # One extra neighbour so that leaving the query itself out still leaves k.
        want = settings.knn_neighbours + (1 if exclude_query else 0)
        neighbours = nearest_queries(store, knn, q, want)
    return Evidence(dense, bm25, rm3, neighbours)


def nearest_queries(store: Store, knn: str, q: EncodedQuery, k: int) -> list[Hit]:
    """The ``k`` training queries most similar to ``q``, with their judgements."""
    (hits,) = store.search(knn, [VectorQuery(q.dense, k)], payload=True)
    return hits
