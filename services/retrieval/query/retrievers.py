"""The first stage: ranked lists of documents from Qdrant's retrievers, and what is made of them.

Both modes search the documents collection with MiniLM (dense) and BM25 (sparse) vectors, the
BM25 query expanded by RM3 feedback from a first lexical pass:

- ``mode=zero-shot`` fuses the lists into the answer (:class:`HybridSearcher`); its work is split
  in two stages, :meth:`HybridSearcher.encode` (CPU: the model) and :meth:`HybridSearcher.rank`
  (the store), so callers can time and trace each one;
- ``mode=full`` keeps them apart as the learned ranker's :class:`Evidence`, with the nearest
  voting queries, gathered in three calls (:func:`gather`).

Score fusion (:func:`fuse`) normalizes scores rather than ranks: BM25 and cosine scores carry how
*sure* each retriever is, which reciprocal-rank fusion throws away (measured in
docs/retrieval.md). A document missing from one list gets that list's lowest normalized score: it
ranked below every candidate there, and "below the lowest" is the most we know.

RM3 (:func:`expand`): the top ``docs`` documents of a first lexical pass vote for their terms:
each document's share of the first-pass score times the term's share of that document's BM25
weight. The ``terms`` best terms form an expansion model, mixed with the original query as
``(1 - weight) * query + weight * expansion`` (both normalised to sum 1). The stored vectors hold
BM25 weights rather than raw counts, so expansion favours terms that are frequent in the feedback
documents *and* rare in the corpus, which is what RM3 with an IDF-weighted term selection does.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from statistics import fmean, pstdev
from typing import Literal, TypeVar

import numpy as np
import numpy.typing as npt

from services.retrieval.encoders.dense import DenseEncoder
from services.retrieval.encoders.sparse import query_vector
from services.retrieval.settings import FeedbackSettings, HybridSettings
from services.retrieval.store.base import Store, StoreError
from services.retrieval.text import analyze
from services.retrieval.types import (
    EncodedQuery,
    Hit,
    PointId,
    RankedDocument,
    Scored,
    SparseVector,
    VectorQuery,
)
from services.telemetry.tracing import stage, tracer

_tracer = tracer(__name__)

Normalization = Literal["zscore", "minmax"]
#: What fused lists are keyed by: doc ids, or point ids of one collection (ties break by key).
K = TypeVar("K", bound=int | str)


def normalize(scores: Mapping[K, float], how: Normalization) -> dict[K, float]:
    """Scores of one list mapped to a common scale."""
    if not scores:
        return {}
    values = list(scores.values())
    if how == "zscore":
        mean, spread = fmean(values), pstdev(values)
        return {k: (v - mean) / spread if spread > 0 else 0.0 for k, v in scores.items()}
    low, high = min(values), max(values)
    return {k: (v - low) / (high - low) if high > low else 1.0 for k, v in scores.items()}


def fuse(
    lists: Sequence[Mapping[K, float]], weights: Sequence[float], how: Normalization
) -> list[tuple[K, float]]:
    """Weighted sum of normalized scores over the union of candidates, best first."""
    if len(lists) != len(weights):
        raise ValueError("one weight per list")
    normalized = [normalize(scores, how) for scores in lists]
    floors = [min(n.values(), default=0.0) for n in normalized]
    union = {key for n in normalized for key in n}
    fused = {
        key: sum(
            w * n.get(key, floor) for n, w, floor in zip(normalized, weights, floors, strict=True)
        )
        for key in union
    }
    # Ties broken by key so the order is reproducible run to run.
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))


def expand(
    query: SparseVector,
    feedback: Sequence[tuple[float, SparseVector]],
    params: FeedbackSettings,
) -> SparseVector:
    """The expanded query from ``(first-pass score, document vector)`` pairs."""
    usable = [(score, doc) for score, doc in feedback if score > 0 and doc.values]
    if not usable or not query.values:
        return query
    total_score = sum(score for score, _ in usable)
    # The term model, summed document by document (np.add.at adds in input order): one
    # summation order, so the expansion has the same bits in every process.
    terms = np.concatenate([np.asarray(doc.indices, dtype=np.int64) for _, doc in usable])
    shares = np.concatenate(
        [(score / total_score) * np.asarray(doc.values) / sum(doc.values) for score, doc in usable]
    )
    unique, first, inverse = np.unique(terms, return_index=True, return_inverse=True)
    weights = np.zeros(len(unique))
    np.add.at(weights, inverse, shares)
    # Best first; ties in order of first appearance, as a stable sort of the dict would keep them.
    by_appearance = np.argsort(first, kind="stable")
    ranked = by_appearance[np.argsort(-weights[by_appearance], kind="stable")][: params.terms]
    best = [(int(unique[i]), float(weights[i])) for i in ranked]
    best_total = sum(v for _, v in best)
    query_total = sum(query.values)
    mixed: dict[int, float] = {
        i: (1 - params.weight) * v / query_total
        for i, v in zip(query.indices, query.values, strict=True)
    }
    for index, value in best:
        mixed[index] = mixed.get(index, 0.0) + params.weight * value / best_total
    return SparseVector(list(mixed), list(mixed.values()))


def expand_from_first_pass(
    query: SparseVector, first: Scored, params: FeedbackSettings
) -> SparseVector:
    """:func:`expand` over a first pass that returned its documents' sparse vectors."""
    pairs = zip(first.scores, first.sparse, strict=True) if first.sparse is not None else ()
    return expand(query, [(s, v) for s, v in pairs if v is not None], params)


TIE_MARGIN = 10
#: What an answer shows of a document: the rest of its payload (the ranker's document fields)
#: stays in the store.
ANSWER_FIELDS = ("doc_id", "title", "text")


def answer_fields(text: bool) -> tuple[str, ...]:
    """The payload fields an answer reads: the abstract only when the caller wants it."""
    return ANSWER_FIELDS if text else ("doc_id", "title")


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
        self, q: EncodedQuery, top_k: int, collection: str | None = None, text: bool = True
    ) -> list[RankedDocument]:
        """Top ``top_k`` documents by the configured fusion, with title and (``text``) abstract."""
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
        lists = self._store.search(collection, queries)
        weights = [s.dense_weight, 1.0 - s.dense_weight][: len(lists)]
        ranked = fuse(
            [dict(zip(found.ids, found.scores, strict=True)) for found in lists], weights, s.fusion
        )
        top = ranked[:top_k]
        ids = [i for i, _ in top]
        fields = answer_fields(text)
        payloads = {h.id: h for h in self._store.retrieve(collection, ids, fields)}
        return [_result(payloads[i], score) for i, score in top if i in payloads]

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
    title, text = str(p.get("title", "")), str(p.get("text", ""))
    return RankedDocument(str(p["doc_id"]), float(score), title, text)


#: (voting query id, similarity), nearest first.
Ranked = list[tuple[str, float]]
#: Documents' columns in the judgement matrix, indexed by point id (-1: not a document).
Columns = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class RankedDocs:
    """One retriever's documents, best first: their columns in the judgement matrix, and scores.

    Documents are numbered once, as the store answers: every signal after it reads arrays by
    column, and doc ids are spelled out only for the few documents a query returns.
    """

    at: npt.NDArray[np.int64]
    scores: npt.NDArray[np.float64]

    def __len__(self) -> int:
        """Number of documents."""
        return len(self.at)


NO_DOCS = RankedDocs(np.zeros(0, dtype=np.int64), np.zeros(0))


@dataclass(frozen=True, slots=True)
class Evidence:
    """Ranked lists for one query: documents by column, and the nearest voting queries by id."""

    dense: RankedDocs
    bm25: RankedDocs
    rm3: RankedDocs
    neighbours: Ranked


def point_columns(names: Mapping[PointId, str], index: Mapping[str, int]) -> Columns:
    """Documents' columns in the judgement matrix by point id (-1: no such document).

    Documents are numbered (schema 6), so a table indexed by point id maps a whole ranked list
    at once; an index whose documents have UUID ids is of an older schema.
    """
    numbered = [p for p in names if isinstance(p, int) and p >= 0]
    if len(numbered) < len(names):
        raise StoreError("documents without numbered point ids: an older index schema, rebuild it")
    table = np.full(max(numbered, default=-1) + 1, -1, dtype=np.int64)
    for p in numbered:
        table[p] = index.get(names[p], -1)
    return table


def _numbered(found: Scored, columns: Columns) -> RankedDocs:
    # Payloads stay in Qdrant: point ids map to columns through the version's table, which
    # spares converting hundreds of payloads per query.
    ids = np.array(found.ids, dtype=np.int64)
    scores = np.array(found.scores, dtype=np.float64)
    inside = ids < len(columns)
    at = np.full(len(ids), -1, dtype=np.int64)
    at[inside] = columns[ids[inside]]
    kept = at >= 0
    return RankedDocs(at[kept], scores[kept])


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
    docs: str,
    knn: str | None,
    q: EncodedQuery,
    depths: Depths,
    columns: Columns,
    names: Mapping[PointId, str],
    exclude_query: str | None = None,
) -> Evidence:
    """Everything the learned ranker looks at for one query, gathered from Qdrant in three calls.

    1. the documents collection: dense top-N, BM25 top-N, and the BM25 top feedback documents
       with their sparse vectors, in one batch;
    2. the documents collection again: BM25 with the RM3-expanded query;
    3. the voting-query collection ``knn``: the nearest voting queries (ids and similarities;
       their judgements are read once per index version, :mod:`.judgements`).

    ``knn`` None skips the third (zero-shot); ``columns`` maps documents' point ids to their
    columns in the judgement matrix (:func:`point_columns`), ``names`` voting queries' point ids
    to their ids. Training and serving gather alike; only ``exclude_query`` differs, which drops a
    voting query from its own neighbours (leave-one-out), or it would vote for its own answers
    and the ranker would learn to trust votes far more than they deserve.
    """
    (evidence,) = gather_many(store, docs, knn, [q], depths, columns, names, [exclude_query])
    return evidence


def gather_many(
    store: Store,
    docs: str,
    knn: str | None,
    queries: Sequence[EncodedQuery],
    depths: Depths,
    columns: Columns,
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
    lists = store.search(docs, batch)
    dense = [_numbered(lists[at], columns) for at, _, _ in shapes]
    bm25 = [_numbered(lists[at + 1], columns) if lex else NO_DOCS for at, lex, _ in shapes]
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
            for i, found in zip(fed, store.search(docs, expanded), strict=True):
                rm3[i] = _numbered(found, columns)
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
