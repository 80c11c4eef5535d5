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
from typing import NamedTuple

import numpy as np
import numpy.typing as npt

from services.retrieval.encoders.dense import DenseEncoder
from services.retrieval.query.candidates import candidates, locate
from services.retrieval.query.corelevance import CoRelevance, anchors
from services.retrieval.query.documents import JudgedDocs, RecordCache
from services.retrieval.query.evidence import (
    Depths,
    Evidence,
    gather,
    gather_many,
    named,
)
from services.retrieval.query.features import CandidateSet, DocTable, QuerySide, build_features
from services.retrieval.query.fusion import fuse
from services.retrieval.query.hybrid import HybridSearcher
from services.retrieval.query.index_version import (
    corpus_collection,
    knn_collection,
    load_corpus_stats,
    load_ranker,
    ranker_collection,
    read_judged,
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
class SupervisedTables:
    """The supervised side of one index version, read from Qdrant once when it is first served.

    It holds the documents some voting query judged (``judged``: by column of the judgement
    matrix, in doc id order) and none of the others, which a query reads where it meets them
    (:mod:`.documents`) and keeps the records of the last few it read (``records``); ``names``
    maps voting queries' point ids to their ids, and ``judgements`` holds their qrels. With
    them, per-query searches return bare ids and scores instead of payloads, and a search that
    wants no abstracts reads the store again only for the candidates outside the judged
    documents.
    """

    knn: str
    judged: JudgedDocs
    doc_table: DocTable
    judgements: Judgements
    names: Mapping[PointId, str]
    co_relevance: CoRelevance
    lexical: LexicalVoters
    judged_by: JudgedBy
    nudged: NudgedDocs
    ranker: Ranker | None
    records: RecordCache


@dataclass(frozen=True, slots=True)
class RankAsk:
    """One query of :meth:`RankingPipeline.rank_many`: what :meth:`~RankingPipeline.rank` takes.

    Without ``include_text`` every answer's ``text`` is empty: the caller needs no abstract.
    """

    query: EncodedQuery
    top_k: int
    include_text: bool = True


class Top(NamedTuple):
    """An answer before its abstracts are read: point ids, (doc id, title) and scores, best first."""

    points: list[int]
    names: list[tuple[str, str]]
    scores: list[float]


def _best(cs: CandidateSet, scores: npt.NDArray[np.float64], top_k: int) -> Top:
    """The ``top_k`` best candidates by score, ties by doc id (by their ordinals)."""
    points = cs.candidates.points
    best = np.lexsort((cs.candidates.ordinals, -scores))[:top_k]
    names = cs.candidates.names(best.tolist())
    return Top(points[best].tolist(), names, scores[best].tolist())


@dataclass(frozen=True, slots=True)
class _Version:
    """Everything one index version serves with, swapped in as a whole by ``refresh``."""

    collection: str
    tables: SupervisedTables | None = None


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
        return self._version.collection

    @property
    def tables(self) -> SupervisedTables | None:
        """The served version's supervised side, as requests read it (None: zero-shot)."""
        return self._version.tables

    @property
    def ranker(self) -> Ranker | None:
        """The learned model, when one is loaded."""
        tables = self._version.tables
        return tables.ranker if tables else None

    def refresh(self) -> str:
        """Re-resolve the alias; on a new version load its supervised side.

        Searches in flight keep the version they started with: the new one replaces the old
        in one assignment.
        """
        collection = self._hybrid.refresh()
        wants = self._settings.mode == "full"
        if collection != self._version.collection or (wants and self._version.tables is None):
            self._version = _Version(collection, self._load(collection) if wants else None)
        return collection

    def _load(self, collection: str) -> SupervisedTables | None:
        knn = knn_collection(collection)
        if not (self._store.collection_exists(collection) and self._store.collection_exists(knn)):
            log.warning("%s has no training-query collection: serving zero-shot", collection)
            return None
        voters = read_knn(self._store, knn)
        judged = read_judged(self._store, collection, list(voters.judged.values()))
        stats = load_corpus_stats(self._store, corpus_collection(collection))
        model = None
        if self._settings.ranker.enabled:
            try:
                model = load_ranker(self._store, ranker_collection(collection))
            except StoreError as e:
                log.warning("no ranker for %s (%s): fusing votes without it", collection, e)
        # Documents in id order: ties in every ranking then break by doc id, by column too.
        matrix = Judgements(voters.judgements, judged.doc_ids)
        lexical = LexicalVoters(voters.terms, matrix)
        judged_by = JudgedBy(voters.terms, matrix)
        nudged = NudgedDocs(
            judged.vectors, voters.vectors, matrix, leave_one_out=self._leave_one_out
        )
        doc_table = DocTable(judged.info, stats.titles)  # read by column
        co = CoRelevance(matrix, judged.ordinals)
        return SupervisedTables(
            knn, judged, doc_table, matrix, voters.names, co, lexical, judged_by, nudged, model,
            RecordCache(),
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
        v = self._version
        if v.tables is None:
            raise RuntimeError(
                f"{v.collection} has no supervised side: nothing to build features from"
            )
        t = v.tables
        # One span per stage, so a trace shows ranking apart from the store calls inside it.
        with stage(_tracer, "gather evidence"):  # searches, RM3 feedback, kNN
            evidence = gather(
                self._store, v.collection, t.knn, q, self._depths, t.names, exclude_query
            )
        return self._features(v.collection, t, q, evidence, exclude_query, own_judgements)

    def _features(
        self,
        collection: str,
        t: SupervisedTables,
        q: EncodedQuery,
        evidence: Evidence,
        exclude_query: str | None = None,
        own_judgements: Mapping[str, int] | None = None,
    ) -> CandidateSet:
        s = self._settings
        with stage(_tracer, "knn votes"):
            points, votes = candidates(evidence, t.judgements, t.judged, s.knn, exclude_query)
            cands = locate(self._store, collection, t.judged, t.records, q, points, evidence.dense)
        with stage(_tracer, "build features") as span:
            ordinal = cands.ordinals
            lists = [ordinal[cands.rows(r.points)] for r in (evidence.dense, evidence.rm3)]
            ranked = anchors(lists)  # by ordinal
            # The judged ones among them spread co-relevance, by column.
            found = t.judged.at_ordinals(np.fromiter(ranked, dtype=np.int64, count=len(ranked)))
            columns = {
                c: w
                for c, k, w in zip(
                    found.at.tolist(), found.known.tolist(), ranked.values(), strict=True
                )
                if k
            }
            co = t.co_relevance.scores(columns, exclude_query)
            located = cands.located
            lexical = t.lexical.columns(q.terms, located, exclude_query)
            judged_by = t.judged_by.scores(q.terms, located, exclude_query)
            nudged = t.nudged.cosines(q.dense, located, exclude_query)
            nudged[cands.outsiders.rows] = cands.outsiders.cosines
            depth = s.hybrid.candidates
            query = QuerySide(q.text, q.terms, lexical, judged_by, nudged)
            rows = build_features(
                evidence, cands, votes, t.doc_table, query, depth, co, own_judgements
            )
            span.set_attribute("ranking.candidates", len(located))
        return CandidateSet(cands, rows)

    def rank(self, q: EncodedQuery, top_k: int, include_text: bool = True) -> list[RankedDocument]:
        """Top ``top_k`` documents with title and, with ``include_text``, abstract (else empty)."""
        (answer,) = self.rank_many([RankAsk(q, top_k, include_text)])
        return answer

    def rank_many(self, asks: Sequence[RankAsk]) -> list[list[RankedDocument]]:
        """:meth:`rank` of several queries at once: the same answers, the work batched.

        Their store searches go in the same three calls (:func:`gather_many`), their feature
        rows through one pass of the model (a row's score does not depend on the others), their
        answers' abstracts in one read.
        """
        v = self._version
        t = v.tables
        if t is None:
            return [self._hybrid.rank(a.query, a.top_k, v.collection, a.include_text) for a in asks]
        if not asks:
            return []
        if t.ranker is None:
            tops = [self._fused_top(v.collection, t, a.query, a.top_k) for a in asks]
            return self._answers(v.collection, tops, asks)
        queries = [a.query for a in asks]
        with stage(_tracer, "gather evidence") as span:
            span.set_attribute("ranking.queries", len(asks))
            evidence = gather_many(self._store, v.collection, t.knn, queries, self._depths, t.names)
        sets = [
            self._features(v.collection, t, q, e) for q, e in zip(queries, evidence, strict=True)
        ]
        with stage(_tracer, "score model"):
            scores = t.ranker.score(np.concatenate([cs.features for cs in sets]))
        ends = np.cumsum([len(cs.features) for cs in sets])[:-1]
        tops = [
            _best(cs, part, a.top_k)
            for cs, part, a in zip(sets, np.split(scores, ends), asks, strict=True)
        ]
        return self._answers(v.collection, tops, asks)

    def _answers(
        self, collection: str, tops: Sequence[Top], asks: Sequence[RankAsk]
    ) -> list[list[RankedDocument]]:
        """Each top list with its documents' ids and titles (and abstracts where its ask wants them).

        Abstracts come from the store, read by the documents' point ids in one call for all.
        """
        texts: dict[int, str] = {}
        if any(a.include_text for a in asks):
            wanted = list(
                dict.fromkeys(
                    p
                    for top, a in zip(tops, asks, strict=True)
                    if a.include_text
                    for p in top.points
                )
            )
            read = self._store.retrieve(collection, wanted, ("text",))
            texts = {int(h.id): str(h.payload.get("text", "")) for h in read}
        answers = []
        for top, ask in zip(tops, asks, strict=True):
            named = zip(top.points, top.names, top.scores, strict=True)
            if ask.include_text:
                answer: list[RankedDocument] = [
                    {"doc_id": d, "score": score, "title": title, "text": texts[p]}
                    for p, (d, title), score in named
                    if p in texts
                ]
            else:
                answer = [
                    {"doc_id": d, "score": score, "title": title, "text": ""}
                    for _, (d, title), score in named
                ]
            answers.append(answer)
        return answers

    def search(self, query: str, top_k: int) -> list[RankedDocument]:
        """Encode and rank in one call."""
        return self.rank(self.encode(query), top_k)

    def _fused_top(self, collection: str, t: SupervisedTables, q: EncodedQuery, top_k: int) -> Top:
        """Without a model (ablation): the ``top_k`` best by z-scored hybrid scores and votes."""
        knn = self._settings.knn
        depth = max(self._settings.hybrid.candidates, top_k)
        hits = self._hybrid.ranked_hits(q, depth, collection)
        hybrid = {str(h.payload["doc_id"]): score for h, score in hits}
        (found,) = self._store.search(t.knn, [VectorQuery(q.dense, knn.neighbours)])
        neighbours = named(found, t.names)
        votes = VoteTable(t.judgements, neighbours, knn.neighbours, knn.power)
        column = t.judgements.doc_index
        voted = {d: float(votes.score[column[d]]) for d in votes.ranked}
        best = fuse([hybrid, voted], [1 - knn.weight, knn.weight], "zscore", top_k)
        # A document is named by the hybrid search's payload or, voted only, by the judged table.
        known = {
            str(h.payload["doc_id"]): (int(h.id), str(h.payload.get("title", ""))) for h, _ in hits
        }
        for d, _ in best:
            if d not in known:
                c = column[d]
                known[d] = (int(t.judged.points[c]), t.judged.titles[c])
        return Top(
            [known[d][0] for d, _ in best],
            [(d, known[d][1]) for d, _ in best],
            [score for _, score in best],
        )
