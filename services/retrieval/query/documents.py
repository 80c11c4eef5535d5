"""The documents a ranking reads: the judged ones held per index version, the rest at the candidates.

The collaborative signals (votes, co-relevance, the judged-by field, the nudged vectors) know only
the documents some voting query judged: that set grows with the training data, not with the
corpus. A served version holds those documents' static features, titles and vectors
(:class:`JudgedDocs`, read by their point ids, which the voting queries' payloads carry); any
other candidate is read from the store when a query meets it (:class:`Outsiders`: its payload
and its dense score, in one call), so neither a query's work nor a worker's memory grows with
the corpus. What the title features need of the whole corpus, its title statistics, is computed
by the build and read once (:class:`CorpusStats`).

Every document's payload holds its ``ordinal``, its place among the corpus's doc ids in sorted
order (:func:`services.retrieval.indexing.points.doc_ordinals`): with it every ranking breaks
ties by doc id without naming its candidates, and ranks a document among the whole corpus.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from services.retrieval.query.bm25_table import FieldStats
from services.retrieval.query.judgements import Located
from services.retrieval.types import DocInfo, Hit

#: What a ranking reads of a document it meets outside the judged ones (and of a judged one,
#: once per version): its name, its title and the ranker's static features.
RANKER_FIELDS = ("doc_id", "title", "title_terms", "train_votes", "text_length", "ordinal")


def doc_info(payload: Mapping[str, Any]) -> DocInfo:
    """The ranker's static features of a document, from its payload."""
    return DocInfo(
        tuple(payload.get("title_terms", ())),
        int(payload.get("train_votes", 0)),
        int(payload.get("text_length", 0)),
    )


@dataclass(frozen=True, slots=True)
class CorpusStats:
    """What the ranker's document features need of the whole corpus: its titles' statistics.

    Title BM25 weighs a candidate's title terms by them. The build computes them in its pass
    over the corpus, so a served version reads one point instead of every title.
    """

    titles: FieldStats

    def to_payload(self) -> dict[str, Any]:
        """As stored (:meth:`from_payload` reads it back)."""
        return {"titles": self.titles.to_payload()}

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> CorpusStats:
        """The statistics as :meth:`to_payload` stored them."""
        return cls(FieldStats.from_payload(payload["titles"]))


class JudgedDocs:
    """The documents any voting query judged, by column of the judgement matrix (doc id order).

    Built from their stored points (:data:`RANKER_FIELDS` and vectors); ``ordinals`` ascend with
    the columns.
    """

    def __init__(self, hits: Sequence[Hit]) -> None:
        """Index the judged documents' points, read from the store."""
        ordered = sorted(hits, key=lambda h: str(h.payload["doc_id"]))
        self.points = np.array([int(h.id) for h in ordered], dtype=np.int64)
        self.ordinals = np.array([int(h.payload["ordinal"]) for h in ordered], dtype=np.int64)
        self._by_point = np.argsort(self.points, kind="stable")
        self._sorted_points = self.points[self._by_point]
        self.doc_ids = [str(h.payload["doc_id"]) for h in ordered]
        self.titles = [str(h.payload.get("title", "")) for h in ordered]
        self.info = {d: doc_info(h.payload) for d, h in zip(self.doc_ids, ordered, strict=True)}
        self.vectors = {
            d: h.dense for d, h in zip(self.doc_ids, ordered, strict=True) if h.dense is not None
        }

    def locate(self, points: npt.NDArray[np.int64]) -> Located:
        """The columns of documents by point id (``known`` False for a document not judged)."""
        at, known = _members(self._sorted_points, points)
        columns = self._by_point[np.where(known, at, 0)] if len(self.points) else at
        return Located(np.where(known, columns, 0), known)

    def at_ordinals(self, ordinals: npt.NDArray[np.int64]) -> Located:
        """The columns of documents by ordinal (the ordinals ascend with the columns)."""
        at, known = _members(self.ordinals, ordinals)
        return Located(np.where(known, at, 0), known)


def _members(
    ascending: npt.NDArray[np.int64], values: npt.NDArray[np.int64]
) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
    """Where each of ``values`` is in ``ascending``, and whether it is there at all."""
    at = np.searchsorted(ascending, values)
    inside = at < len(ascending)
    known = np.zeros(len(values), dtype=np.bool_)
    known[inside] = ascending[at[inside]] == values[inside]
    return at, known


@dataclass(frozen=True, slots=True)
class DocRecord:
    """What a ranking reads of a document outside the judged ones: name, title, features, place."""

    doc_id: str
    title: str
    info: DocInfo
    ordinal: int

    @classmethod
    def of_payload(cls, payload: Mapping[str, Any]) -> DocRecord:
        """The record of a document from its payload's :data:`RANKER_FIELDS`."""
        return cls(
            str(payload["doc_id"]),
            str(payload.get("title", "")),
            doc_info(payload),
            int(payload["ordinal"]),
        )


class RecordCache:
    """The records of the last documents read outside the judged ones, at most ``size`` of them.

    A document's record does not change within an index version, and the same few outsiders
    come back query after query (on NFCorpus, the 13 documents no voting query judged); the
    bound keeps a worker's memory from growing with the corpus. Safe across search threads.
    """

    def __init__(self, size: int = 4096) -> None:
        """Hold at most ``size`` records, the least recently used dropped first."""
        self._size = size
        self._records: OrderedDict[int, DocRecord] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, points: Sequence[int]) -> list[DocRecord | None]:
        """The held record of each point id (None where there is none)."""
        with self._lock:
            found = [self._records.get(p) for p in points]
            for p, record in zip(points, found, strict=True):
                if record is not None:
                    self._records.move_to_end(p)
            return found

    def put(self, records: Mapping[int, DocRecord]) -> None:
        """Hold ``records`` (point id -> record), dropping the least recently used beyond the bound."""
        with self._lock:
            self._records.update(records)
            while len(self._records) > self._size:
                self._records.popitem(last=False)


@dataclass(frozen=True, slots=True)
class Outsiders:
    """The candidates of one query that no voting query judged, read at the candidates.

    ``rows`` are their places among the candidates; ``records`` what their payloads say,
    ``cosines`` their dense scores for the query (the store's cosine: a document nobody judged
    is not nudged, so its nudged cosine is its plain one).
    """

    rows: npt.NDArray[np.intp]
    records: list[DocRecord]
    cosines: npt.NDArray[np.float64]

    @property
    def ordinals(self) -> npt.NDArray[np.int64]:
        """Their places among the corpus's doc ids."""
        return np.array([r.ordinal for r in self.records], dtype=np.int64)

    @property
    def info(self) -> list[DocInfo]:
        """Their ranker features."""
        return [r.info for r in self.records]


NO_OUTSIDERS = Outsiders(np.zeros(0, dtype=np.intp), [], np.zeros(0))
