"""Hybrid search: MiniLM dense + BM25 sparse candidates from Qdrant, fused, with payloads.

The work is split in two stages, :meth:`HybridSearcher.encode` (CPU: the model) and
:meth:`HybridSearcher.rank` (the store), so callers can time and trace each one.
"""

from __future__ import annotations

from services.retrieval.encoders.dense import DenseEncoder
from services.retrieval.encoders.sparse import encode_query
from services.retrieval.query.feedback import expand_from_hits
from services.retrieval.query.fusion import fuse
from services.retrieval.settings import FeedbackSettings, HybridSettings
from services.retrieval.store.base import Store
from services.retrieval.types import EncodedQuery, Hit, SearchResult, SparseVector, VectorQuery

TIE_MARGIN = 10


class HybridSearcher:
    """Dense + BM25 (+RM3) candidates fused in Qdrant, on the collection the alias points at.

    The alias is resolved once; :meth:`refresh` re-reads it. ``rank`` also takes the
    collection explicitly, for callers that pin one version across several calls.
    """

    def __init__(
        self,
        store: Store,
        encoder: DenseEncoder,
        alias: str,
        params: HybridSettings,
        feedback: FeedbackSettings,
    ) -> None:
        """Search the collection ``alias`` points at, with these fusion and feedback settings."""
        self._store = store
        self._encoder = encoder
        self._alias = alias
        self._params = params
        self._feedback = feedback
        self.collection = alias
        self.refresh()

    def refresh(self) -> str:
        """Re-resolve the alias (after a re-index) and return the concrete collection."""
        self.collection = self._store.resolve_alias(self._alias) or self._alias
        return self.collection

    def encode(self, query: str) -> EncodedQuery:
        """Dense and sparse representations of the query."""
        dense = self._encoder.encode([query])[0]
        return EncodedQuery([float(x) for x in dense], encode_query(query), query)

    def rank(
        self, q: EncodedQuery, top_k: int, collection: str | None = None
    ) -> list[SearchResult]:
        """Top ``top_k`` documents by the configured fusion, with title and text."""
        s = self._params
        collection = collection or self.collection
        limit = max(s.candidates, top_k)
        queries = [VectorQuery(q.dense, limit)]
        if q.sparse.indices:  # a query of stopwords only has no lexical side
            queries.append(VectorQuery(self._with_feedback(q.sparse, collection), limit))
        if s.fusion == "rrf" or s.fusion == "dbsf":
            # NFCorpus holds duplicate documents, which tie exactly; the engine orders ties
            # arbitrarily, so fetch a few more and break ties by doc id: same query, same answer.
            hits = self._store.fused_search(collection, queries, s.fusion, top_k + TIE_MARGIN)
            results = sorted(
                (_result(h, h.score) for h in hits), key=lambda r: (-r.score, r.doc_id)
            )
            return results[:top_k]
        lists = self._store.search(collection, queries, payload=False)
        weights = [s.dense_weight, 1.0 - s.dense_weight][: len(lists)]
        ranked = fuse([{h.id: h.score for h in hits} for hits in lists], weights, s.fusion)
        top = ranked[:top_k]
        payloads = {h.id: h for h in self._store.retrieve(collection, [i for i, _ in top])}
        return [_result(payloads[i], score) for i, score in top if i in payloads]

    def _with_feedback(self, sparse: SparseVector, collection: str) -> SparseVector:
        """RM3 expansion from a first lexical pass (one extra store call), when switched on."""
        if self._feedback.docs == 0:
            return sparse
        first_pass = VectorQuery(sparse, self._feedback.docs, with_sparse=True)
        (first,) = self._store.search(collection, [first_pass], payload=False)
        return expand_from_hits(sparse, first, self._feedback)

    def search(self, query: str, top_k: int) -> list[SearchResult]:
        """Encode and rank in one call."""
        return self.rank(self.encode(query), top_k)


def _result(hit: Hit, score: float) -> SearchResult:
    p = hit.payload
    return SearchResult(str(p["doc_id"]), float(score), str(p.get("title", "")), str(p["text"]))
