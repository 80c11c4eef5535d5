"""The zero-shot answer: dense (MiniLM) and BM25 (+RM3) candidates fused, from Qdrant.

``mode=zero-shot`` (or an index built without training data) serves :class:`HybridSearcher`; its
work is split in two stages, :meth:`HybridSearcher.encode` (CPU: the model) and
:meth:`HybridSearcher.rank` (the store), so callers can time and trace each one. The BM25 query
is expanded by RM3 feedback (:mod:`.feedback`) from a first lexical pass, and the lists are
fused by normalized scores (:mod:`.fusion`).
"""

from __future__ import annotations

from collections.abc import Sequence
from operator import attrgetter

import numpy as np

from services.nfcorpus.ranking import break_ties
from services.retrieval.encoders.dense import DenseEncoder
from services.retrieval.encoders.sparse import query_vector
from services.retrieval.query.feedback import expand_from_first_pass
from services.retrieval.query.fusion import fuse
from services.retrieval.settings import FeedbackSettings, HybridSettings
from services.retrieval.store.base import Store
from services.retrieval.text import analyze
from services.retrieval.types import EncodedQuery, Hit, RankedDocument, SparseVector, VectorQuery

TIE_MARGIN = 10
_score = attrgetter("score")


def _doc_id(hit: Hit) -> str:
    return str(hit.payload["doc_id"])


#: What an answer shows of a document: the rest of its payload (the ranker's document fields)
#: stays in the store.
ANSWER_FIELDS = ("doc_id", "title", "text")


def answer_fields(include_text: bool) -> tuple[str, ...]:
    """The payload fields an answer reads: the abstract only when the caller wants it."""
    return ANSWER_FIELDS if include_text else ("doc_id", "title")


def encoded_query(dense: Sequence[float], text: str) -> EncodedQuery:
    """The query of ``text`` with its MiniLM vector ``dense``: analyzed here, once."""
    terms = tuple(analyze(text))
    # A model's float32 row to Python floats in one C pass (the same values float() gives).
    values = dense.tolist() if isinstance(dense, np.ndarray) else [float(x) for x in dense]
    return EncodedQuery(values, query_vector(terms), text, terms)


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
        return encoded_query(self._encoder.encode([query])[0], query)

    def encode_many(self, queries: Sequence[str]) -> list[EncodedQuery]:
        """:meth:`encode` of several queries in one model pass (each to the same bits)."""
        dense = self._encoder.encode(list(queries))
        return [encoded_query(vector, text) for vector, text in zip(dense, queries, strict=True)]

    def rank(
        self,
        q: EncodedQuery,
        top_k: int,
        collection: str | None = None,
        include_text: bool = True,
    ) -> list[RankedDocument]:
        """Top ``top_k`` documents by the configured fusion, with title and abstract.

        Without ``include_text`` every ``text`` is empty.
        """
        return [
            _result(h, score) for h, score in self.ranked_hits(q, top_k, collection, include_text)
        ]

    def ranked_hits(
        self,
        q: EncodedQuery,
        top_k: int,
        collection: str | None = None,
        include_text: bool = False,
    ) -> list[tuple[Hit, float]]:
        """:meth:`rank`'s documents as the store read them (point ids, payloads), with scores."""
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
            return [(h, h.score) for h in break_ties(hits, top_k, _score, _doc_id)]
        lists = self._store.search(collection, queries)
        weights = [s.dense_weight, 1.0 - s.dense_weight][: len(lists)]
        ranked = fuse(
            [dict(zip(found.ids, found.scores, strict=True)) for found in lists], weights, s.fusion
        )
        top = ranked[:top_k]
        ids = [i for i, _ in top]
        fields = answer_fields(include_text)
        payloads = {h.id: h for h in self._store.retrieve(collection, ids, fields)}
        return [(payloads[i], score) for i, score in top if i in payloads]

    def _with_feedback(self, sparse: SparseVector, collection: str) -> SparseVector:
        """RM3 expansion from a first lexical pass (one extra store call), when switched on."""
        if self._feedback.docs == 0:
            return sparse
        first_pass = VectorQuery(sparse, self._feedback.docs, with_sparse=True)
        (first,) = self._store.search(collection, [first_pass])
        return expand_from_first_pass(sparse, first, self._feedback)

    def search(self, query: str, top_k: int) -> list[RankedDocument]:
        """Encode and rank in one call."""
        return self.rank(self.encode(query), top_k)


def _result(hit: Hit, score: float) -> RankedDocument:
    p = hit.payload
    return {
        "doc_id": str(p["doc_id"]),
        "score": float(score),
        "title": str(p.get("title", "")),
        "text": str(p.get("text", "")),
    }
