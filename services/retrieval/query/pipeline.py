"""What ``search_nfcorpus`` serves: hybrid candidates, kNN votes and the learned ranker.

``mode=zero-shot`` (or an index built without training data) serves the plain hybrid search;
``mode=full`` gathers :func:`evidence <services.retrieval.query.evidence.gather>`, turns it into
:mod:`features <services.retrieval.query.features>` and orders candidates with the
:mod:`ranker <services.retrieval.query.ranker>` (or, with ``RETRIEVAL_USE_RANKER=false``, by a z-score fusion of
hybrid scores and votes: the ablation step between the two).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np

from services.retrieval.encoders.dense import DenseEncoder
from services.retrieval.query.corelevance import CoRelevance, anchors
from services.retrieval.query.evidence import (
    Columns,
    Depths,
    Evidence,
    gather,
    gather_many,
    named,
    point_columns,
)
from services.retrieval.query.features import (
    CandidateSet,
    DocTable,
    QuerySide,
    build_features,
    candidates,
)
from services.retrieval.query.fusion import fuse
from services.retrieval.query.hybrid import HybridSearcher
from services.retrieval.query.index_version import (
    knn_collection,
    load_ranker,
    ranker_collection,
    read_documents,
    read_knn,
)
from services.retrieval.query.judged_by import JudgedBy, NudgedDocs
from services.retrieval.query.judgements import Judgements
from services.retrieval.query.ranker import Ranker
from services.retrieval.query.votes import LexicalVoters, VoteTable
from services.retrieval.settings import RetrievalSettings
from services.retrieval.store.base import Store, StoreError
from services.retrieval.types import EncodedQuery, PointId, RankedDocument, VectorQuery
from services.telemetry.tracing import stage, tracer

log = logging.getLogger(__name__)
_tracer = tracer(__name__)


@dataclass(frozen=True, slots=True)
class Supervised:
    """The supervised side of one index version, read from Qdrant once when it is first served.

    ``columns`` maps documents' point ids to their columns in the judgement matrix, ``points``
    doc ids to point ids, ``names`` voting queries' point ids to their ids, ``judgements`` holds
    the voting queries' qrels: with them, per-query searches return bare ids and scores instead
    of payloads. ``titles`` (doc id -> title, about 0.5 MB) answer a search that wants no
    abstracts without reading the store again.
    """

    knn: str
    docs: DocTable
    judgements: Judgements
    columns: Columns
    points: Mapping[str, PointId]
    names: Mapping[PointId, str]
    co_relevance: CoRelevance
    lexical: LexicalVoters
    judged_by: JudgedBy
    nudged: NudgedDocs
    ranker: Ranker | None
    titles: Mapping[str, str]


@dataclass(frozen=True, slots=True)
class RankAsk:
    """One query of :meth:`RankingPipeline.rank_many`: what :meth:`~RankingPipeline.rank` takes."""

    query: EncodedQuery
    top_k: int
    text: bool = True


#: An answer before its documents are read: (doc id, score), best first.
Scored = list[tuple[str, float]]


def _best(sup: Supervised, cs: CandidateSet, scores: np.ndarray, top_k: int) -> Scored:
    """The ``top_k`` best candidates by score, ties by doc id (columns are in doc id order)."""
    at = cs.candidates.located.at
    best = np.lexsort((at, -scores))[:top_k]
    names = sup.judgements.docs
    return [(names[at[i]], float(scores[i])) for i in best]


@dataclass(frozen=True, slots=True)
class _Version:
    """Everything one index version serves with, swapped in as a whole by ``refresh``."""

    docs: str
    supervised: Supervised | None = None


class RankingPipeline:
    """The served ranking; same ``encode``/``rank`` stages as :class:`HybridSearcher`."""

    def __init__(
        self,
        store: Store,
        encoder: DenseEncoder,
        settings: RetrievalSettings,
        leave_one_out: bool = False,
    ) -> None:
        """Bind the store and settings; :meth:`refresh` finds the collections and model.

        ``leave_one_out`` (training and the ranker lab) keeps what :meth:`candidate_set` needs
        to leave a voting query out; serving has no use for it.
        """
        self._store = store
        self._settings = settings
        self._leave_one_out = leave_one_out
        s = settings
        self._hybrid = HybridSearcher(store, encoder, s.store.collection, s.hybrid, s.feedback)
        self._depths = Depths(s.hybrid.candidates, s.feedback, s.knn.neighbours)
        self._version = _Version(self._hybrid.collection)
        self.refresh()

    @property
    def collection(self) -> str:
        """The documents collection being served."""
        return self._version.docs

    @property
    def supervised(self) -> bool:
        """Whether kNN votes take part in the ranking."""
        return self.supervised_tables is not None

    @property
    def supervised_tables(self) -> Supervised | None:
        """The served version's kNN, lexical and document tables and ranker, as requests read them."""
        return self._version.supervised

    @property
    def ranker(self) -> Ranker | None:
        """The learned model, when one is loaded."""
        sup = self._version.supervised
        return sup.ranker if sup else None

    def refresh(self) -> str:
        """Re-resolve the alias; on a new version load its supervised side.

        Searches in flight keep the version they started with: the new one replaces the old
        in one assignment.
        """
        docs = self._hybrid.refresh()
        wants = self._settings.mode == "full"
        if docs != self._version.docs or (wants and self._version.supervised is None):
            self._version = _Version(docs, self._load(docs) if wants else None)
        return docs

    def _load(self, docs: str) -> Supervised | None:
        knn = knn_collection(docs)
        if not (self._store.collection_exists(docs) and self._store.collection_exists(knn)):
            log.warning("%s has no training-query collection: serving zero-shot", docs)
            return None
        documents = read_documents(self._store, docs)
        voters = read_knn(self._store, knn)
        model = None
        if self._settings.ranker.enabled:
            try:
                model = load_ranker(self._store, ranker_collection(docs))
            except StoreError as e:
                log.warning("no ranker for %s (%s): fusing votes without it", docs, e)
        # Documents in id order: ties in every ranking then break by doc id, by column too.
        matrix = Judgements(voters.judgements, sorted(documents.info))
        columns = point_columns(documents.names, matrix.doc_index)
        points = {d: p for p, d in documents.names.items()}
        lexical = LexicalVoters(voters.terms, matrix)
        judged_by = JudgedBy(voters.terms, matrix)
        nudged = NudgedDocs(
            documents.vectors, voters.vectors, matrix, leave_one_out=self._leave_one_out
        )
        table = DocTable({d: documents.info[d] for d in matrix.docs})  # read by column
        co = CoRelevance(matrix)
        return Supervised(
            knn, table, matrix, columns, points, voters.names, co, lexical, judged_by, nudged,
            model, documents.titles,
        )  # fmt: skip

    def encode(self, query: str) -> EncodedQuery:
        """Dense and sparse representations of the query."""
        return self._hybrid.encode(query)

    def encode_many(self, queries: Sequence[str]) -> list[EncodedQuery]:
        """:meth:`encode` of several queries in one model pass (each to the same bits)."""
        return self._hybrid.encode_many(queries)

    def candidate_set(
        self,
        q: EncodedQuery,
        exclude_query: str | None = None,
        own_judgements: Mapping[str, int] | None = None,
    ) -> CandidateSet:
        """Candidates and feature rows for one query (training passes the leave-one-out args)."""
        sup = self._supervised()
        # One span per stage, so a trace shows ranking apart from the store calls inside it.
        with stage(_tracer, "gather evidence"):  # searches, RM3 feedback, kNN
            evidence = gather(
                self._store, self._version.docs, sup.knn, q, self._depths, sup.columns,
                sup.names, exclude_query,
            )  # fmt: skip
        return self._features(sup, q, evidence, exclude_query, own_judgements)

    def _supervised(self) -> Supervised:
        sup = self._version.supervised
        if sup is None:
            raise RuntimeError(
                f"{self._version.docs} has no supervised side: nothing to build features from"
            )
        return sup

    def _features(
        self,
        sup: Supervised,
        q: EncodedQuery,
        evidence: Evidence,
        exclude_query: str | None = None,
        own_judgements: Mapping[str, int] | None = None,
    ) -> CandidateSet:
        s = self._settings
        with stage(_tracer, "knn votes"):
            cands, votes = candidates(evidence, sup.judgements, s.knn, exclude_query)
        with stage(_tracer, "build features") as span:
            co = sup.co_relevance.scores(
                anchors([evidence.dense.at, evidence.rm3.at]), exclude_query
            )
            located = cands.located
            lexical = sup.lexical.columns(q.terms, located, exclude_query)
            judged_by = sup.judged_by.scores(q.terms, located, exclude_query)
            nudged = sup.nudged.cosines(q.dense, located, exclude_query)
            depth = s.hybrid.candidates
            query = QuerySide(q.text, q.terms, lexical, judged_by, nudged)
            rows = build_features(
                evidence, cands, votes, sup.docs, query, depth, co, own_judgements
            )
            span.set_attribute("ranking.candidates", len(located))
        return CandidateSet(cands, rows)

    def rank(self, q: EncodedQuery, top_k: int, text: bool = True) -> list[RankedDocument]:
        """Top ``top_k`` documents with title and, with ``text``, abstract (else empty)."""
        (answer,) = self.rank_many([RankAsk(q, top_k, text)])
        return answer

    def rank_many(self, asks: Sequence[RankAsk]) -> list[list[RankedDocument]]:
        """:meth:`rank` of several queries at once: the same answers, the work batched.

        Their store searches go in the same three calls (:func:`gather_many`), their feature
        rows through one pass of the model (a row's score does not depend on the others), their
        answers' abstracts in one read.
        """
        v = self._version
        sup = v.supervised
        if sup is None:
            return [self._hybrid.rank(a.query, a.top_k, v.docs, a.text) for a in asks]
        if not asks:
            return []
        if sup.ranker is None:
            tops = [self._fused_top(v.docs, sup, a.query, a.top_k) for a in asks]
            return self._answers(v.docs, sup, tops, [a.text for a in asks])
        queries = [a.query for a in asks]
        with stage(_tracer, "gather evidence") as span:
            span.set_attribute("ranking.queries", len(asks))
            evidence = gather_many(
                self._store, v.docs, sup.knn, queries, self._depths, sup.columns, sup.names
            )
        sets = [self._features(sup, q, e) for q, e in zip(queries, evidence, strict=True)]
        with stage(_tracer, "score model"):
            scores = sup.ranker.score(np.concatenate([cs.features for cs in sets]))
        ends = np.cumsum([len(cs.features) for cs in sets])[:-1]
        tops = [
            _best(sup, cs, part, a.top_k)
            for cs, part, a in zip(sets, np.split(scores, ends), asks, strict=True)
        ]
        return self._answers(v.docs, sup, tops, [a.text for a in asks])

    def _answers(
        self, docs: str, sup: Supervised, tops: Sequence[Scored], texts: Sequence[bool]
    ) -> list[list[RankedDocument]]:
        """Each top list with its documents' titles (and abstracts where ``texts`` says).

        Titles come from the version's table; abstracts from the store, in one read for all.
        """
        read: dict[str, Mapping[str, object]] = {}
        if any(texts):
            wanted = dict.fromkeys(
                d for top, t in zip(tops, texts, strict=True) if t for d, _ in top
            )
            hits = self._store.retrieve(docs, [sup.points[d] for d in wanted], ("doc_id", "text"))
            read = {str(h.payload["doc_id"]): h.payload for h in hits}
        answers = []
        for top, text in zip(tops, texts, strict=True):
            if text:
                answer = [
                    RankedDocument(d, score, sup.titles[d], str(read[d].get("text", "")))
                    for d, score in top
                    if d in read
                ]
            else:
                answer = [RankedDocument(d, score, sup.titles[d], "") for d, score in top]
            answers.append(answer)
        return answers

    def search(self, query: str, top_k: int) -> list[RankedDocument]:
        """Encode and rank in one call."""
        return self.rank(self.encode(query), top_k)

    def _fused_top(self, docs: str, sup: Supervised, q: EncodedQuery, top_k: int) -> Scored:
        """Without a model (ablation): the ``top_k`` best by z-scored hybrid scores and votes."""
        knn = self._settings.knn
        depth = max(self._settings.hybrid.candidates, top_k)
        hybrid = {r.doc_id: r.score for r in self._hybrid.rank(q, depth, docs)}
        (found,) = self._store.search(sup.knn, [VectorQuery(q.dense, knn.neighbours)])
        neighbours = named(found, sup.names)
        votes = VoteTable(sup.judgements, neighbours, knn.neighbours, knn.power)
        voted = {d: float(votes.score[sup.judgements.doc_index[d]]) for d in votes.ranked}
        weights = [1 - knn.weight, knn.weight]
        return fuse([hybrid, voted], weights, "zscore", top_k)
