"""A query's candidates: the union of its ranked lists and its votes, located and read.

Candidates are known by their point ids. Those some voting query judged are located among the
version's judged documents (:class:`~.documents.JudgedDocs`); the others, the outsiders, are
read where the query meets them (:func:`locate`), so a query's work is proportional to its
candidates, not to the corpus.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from services.retrieval.query.documents import (
    NO_OUTSIDERS,
    RANKER_FIELDS,
    DocRecord,
    JudgedDocs,
    Outsiders,
    RecordCache,
)
from services.retrieval.query.evidence import Evidence, RankedDocs
from services.retrieval.query.judgements import Judgements, Located
from services.retrieval.query.votes import VoteTable
from services.retrieval.settings import KnnSettings
from services.retrieval.store.base import Store, StoreError
from services.retrieval.types import EncodedQuery
from services.telemetry.tracing import stage, tracer

_tracer = tracer(__name__)


class RowIndex:
    """Candidates' rows by point id (every id asked must be a candidate's)."""

    def __init__(self, points: npt.NDArray[np.int64]) -> None:
        """Index the candidates' point ids."""
        self._order = np.argsort(points, kind="stable")
        self._sorted = points[self._order]

    def __call__(self, points: npt.NDArray[np.int64]) -> npt.NDArray[np.intp]:
        """The rows of ``points``."""
        return self._order[np.searchsorted(self._sorted, points)]


@dataclass(frozen=True, slots=True)
class Candidates:
    """A query's candidates: point ids, their columns among the judged documents, the others read.

    ``located`` places them in the judgement matrix (``known`` False: no voting query judged
    it); ``outsiders`` is what the store said of those at the candidates; ``ordinals`` are their
    places in doc id order (what ties break by), ``rows`` finds a candidate by point id. Their
    ids are named on demand: serving names only the few it answers with.
    """

    points: npt.NDArray[np.int64]
    located: Located
    judged: JudgedDocs
    outsiders: Outsiders = NO_OUTSIDERS
    ordinals: npt.NDArray[np.int64] = field(init=False)
    rows: RowIndex = field(init=False)

    def __post_init__(self) -> None:
        """The candidates' ordinals: the judged documents' table's, or what was read of them."""
        at, known = self.located.at, self.located.known
        ordinals = np.where(known, self.judged.ordinals[at], 0) if len(at) else at.copy()
        ordinals[self.outsiders.rows] = self.outsiders.ordinals
        object.__setattr__(self, "ordinals", ordinals)
        object.__setattr__(self, "rows", RowIndex(self.points))

    def __len__(self) -> int:
        """Number of candidates."""
        return len(self.points)

    def names(self, rows: Sequence[int]) -> list[tuple[str, str]]:
        """The doc id and title of the candidates at ``rows``."""
        outside = {row: k for k, row in enumerate(self.outsiders.rows.tolist())}
        at, known = self.located.at, self.located.known
        named = []
        for row in rows:
            if known[row]:
                column = int(at[row])
                named.append((self.judged.doc_ids[column], self.judged.titles[column]))
            else:
                record = self.outsiders.records[outside[row]]
                named.append((record.doc_id, record.title))
        return named

    @property
    def doc_ids(self) -> list[str]:
        """The candidates' doc ids, in candidate order."""
        return [d for d, _ in self.names(range(len(self.points)))]


def candidates(
    evidence: Evidence,
    judgements: Judgements,
    judged: JudgedDocs,
    knn: KnnSettings,
    exclude_query: str | None = None,
) -> tuple[npt.NDArray[np.int64], VoteTable]:
    """Union of the retrievers' lists and the ``knn.vote_depth`` most-voted documents.

    Point ids in order of first appearance: dense, BM25, RM3, then the votes (``judged`` names
    the judgement matrix's columns by point id).
    """
    votes = VoteTable(judgements, evidence.neighbours, knn.neighbours, knn.power, exclude_query)
    voted = judged.points[votes.top_at(knn.vote_depth)]
    listed = np.concatenate(
        (evidence.dense.points, evidence.bm25.points, evidence.rm3.points, voted)
    )
    _, first = np.unique(listed, return_index=True)
    return listed[np.sort(first)], votes


def locate(
    store: Store,
    collection: str,
    judged: JudgedDocs,
    records: RecordCache,
    q: EncodedQuery,
    points: npt.NDArray[np.int64],
    dense: RankedDocs,
) -> Candidates:
    """The candidates ``points`` among the judged documents, the others read from the store.

    Of those no voting query judged, a query needs the record (:data:`RANKER_FIELDS`) and
    the dense score: records come from the version's ``records`` cache, scores from the
    dense list (``dense``); what neither holds is read in one call restricted to them.
    """
    located = judged.locate(points)
    rows = np.flatnonzero(~located.known)
    if not len(rows):
        return Candidates(points, located, judged)
    outside = points[rows].tolist()
    held = records.get(outside)
    listed = dict(zip(dense.points.tolist(), dense.scores.tolist(), strict=True))
    unscored = [p for p in outside if p not in listed]
    unread = [p for p, r in zip(outside, held, strict=True) if r is None]
    fresh: dict[int, DocRecord] = {}
    if unscored or unread:
        with stage(_tracer, "read outsiders") as span:
            span.set_attribute("ranking.outsiders", len(outside))
            span.set_attribute("ranking.outsiders_read", len(unread))
            # Two calls, not one search with payloads: the engine reads payloads by id at a
            # fraction of what it costs inside a search (docs/scale.md has the figures).
            if unscored:
                scored = store.score_points(collection, q.dense, unscored, False)
                listed.update((int(h.id), h.score) for h in scored)
            read = store.retrieve(collection, unread, RANKER_FIELDS) if unread else []
        if len(read) < len(unread) or any(p not in listed for p in unscored):
            raise StoreError(f"{collection} lacks documents its searches found: rebuild it")
        fresh = {int(h.id): DocRecord.of_payload(h.payload) for h in read}
        records.put(fresh)
    every = [r if r is not None else fresh[p] for p, r in zip(outside, held, strict=True)]
    cosines = np.array([listed[p] for p in outside], dtype=np.float64)
    return Candidates(points, located, judged, Outsiders(rows, every, cosines))
