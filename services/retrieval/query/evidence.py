"""Everything the learned ranker looks at for one query, gathered from Qdrant in three calls.

1. the documents collection: dense (MiniLM) top-N, BM25 top-N, and the BM25 top feedback documents
   with their sparse vectors, in one batch;
2. the documents collection again: BM25 with the RM3-expanded query;
3. the training-query collection: the nearest training queries (ids and similarities; their
   judgements are read once per index version, see :mod:`services.retrieval.query.judgements`).

Training and serving call :func:`gather` alike; the only difference is ``exclude_query``, which
drops a training query from its own neighbours (leave-one-out), or it would vote for its own
answers and the ranker would learn to trust votes far more than they deserve.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from services.retrieval.query.feedback import expand_from_hits
from services.retrieval.settings import FeedbackSettings
from services.retrieval.store.base import Store
from services.retrieval.types import EncodedQuery, Hit, VectorQuery
from services.telemetry.tracing import tracer

_tracer = tracer(__name__)

#: (document or query id, score), best first.
Ranked = list[tuple[str, float]]


@dataclass(frozen=True, slots=True)
class Evidence:
    """Ranked lists for one query: documents by id, and the nearest voting queries by id."""

    dense: Ranked
    bm25: Ranked
    rm3: Ranked
    neighbours: Ranked


def _named(hits: list[Hit], names: Mapping[str, str]) -> Ranked:
    # Payloads stay in Qdrant: point ids map to doc/query ids through the version's table,
    # which spares converting hundreds of payloads per query.
    return [(names[h.id], h.score) for h in hits if h.id in names]


@dataclass(frozen=True, slots=True)
class Depths:
    """How much evidence to gather: ranked-list depth, RM3 settings, voting neighbours."""

    candidates: int
    feedback: FeedbackSettings
    neighbours: int


def gather(
    store: Store,
    docs: str,
    knn: str | None,
    q: EncodedQuery,
    depths: Depths,
    names: Mapping[str, str],
    exclude_query: str | None = None,
) -> Evidence:
    """Collect the lists; ``knn`` None skips the collaborative signal (zero-shot).

    ``names`` maps point ids to document and query ids.
    """
    depth, rm3_params = depths.candidates, depths.feedback
    batch = [VectorQuery(q.dense, depth)]
    lexical = bool(q.sparse.indices)  # a query of stopwords only has no lexical side
    feedback = lexical and rm3_params.docs > 0
    if lexical:
        batch.append(VectorQuery(q.sparse, depth))
    if feedback:
        batch.append(VectorQuery(q.sparse, rm3_params.docs, with_sparse=True))
    lists = store.search(docs, batch, payload=False)
    dense = _named(lists[0], names)
    bm25 = _named(lists[1], names) if lexical else []
    rm3 = bm25
    if feedback:
        with _tracer.start_as_current_span("rm3 feedback"):  # expansion, then its search
            expanded = expand_from_hits(q.sparse, lists[2], rm3_params)
            (hits,) = store.search(docs, [VectorQuery(expanded, depth)], payload=False)
            rm3 = _named(hits, names)
    neighbours: Ranked = []
    if knn is not None:
        with _tracer.start_as_current_span("knn neighbours"):
            # One extra neighbour so that leaving the query itself out still leaves k.
            want = depths.neighbours + (1 if exclude_query else 0)
            (hits,) = store.search(knn, [VectorQuery(q.dense, want)], payload=False)
            neighbours = _named(hits, names)
    return Evidence(dense, bm25, rm3, neighbours)
