"""Query-independent facts about every document, as arrays the ranker's features read by index.

Built once per index version from the documents' payloads. A query then reads its candidates'
priors, lengths, title overlap and title-only BM25 by position, instead of computing anything
per candidate in Python.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from services.retrieval.query.bm25_table import Bm25Table
from services.retrieval.query.judgements import positions
from services.retrieval.types import DocInfo

NAN = math.nan

Column = npt.NDArray[np.float64]


@dataclass(frozen=True, slots=True)
class DocColumns:
    """The document-side feature columns of some candidates (unknown documents: NaN, prior 0)."""

    prior: Column
    title_overlap: Column
    doc_length: Column
    title_length: Column
    title_bm25: Column


class DocTable:
    """Every document's :class:`DocInfo` as arrays, with a title-term index."""

    def __init__(self, doc_info: Mapping[str, DocInfo]) -> None:
        """Index ``doc_info`` (doc id -> static features)."""
        self.info = doc_info
        self._index = {d: i for i, d in enumerate(doc_info)}
        infos = list(doc_info.values())
        self._log_prior = np.array([log_prior(i.train_votes) for i in infos])
        self._doc_length = np.log1p(np.array([i.text_terms for i in infos], dtype=np.float64))
        self._titles = Bm25Table([i.title_terms for i in infos])

    def columns(
        self,
        doc_ids: Sequence[str],
        query_terms: Sequence[str],
        own_judgements: Mapping[str, int] | None = None,
    ) -> DocColumns:
        """The document columns of ``doc_ids`` for a query of ``query_terms``.

        ``own_judgements`` (training only) are taken out of the prior: leave-one-out.
        """
        at, known = positions(self._index, doc_ids)
        size = len(self._log_prior)

        def read(values: Column, missing: float = NAN) -> Column:
            return np.where(known, values[at] if size else 0.0, missing)

        prior = read(self._log_prior, 0.0)
        for i, d in enumerate(doc_ids):
            if own_judgements and d in own_judgements and d in self.info:
                prior[i] = log_prior(self.info[d].train_votes - 1)
        terms = set(query_terms)
        shared = np.zeros(size)
        for term in terms:
            if (rows := self._titles.rows(term)) is not None:
                shared[rows] += 1
        overlap = read(shared / len(terms)) if terms else np.full(len(doc_ids), NAN)
        bm25 = self._titles.scores(query_terms)
        return DocColumns(
            prior, overlap, read(self._doc_length), read(self._titles.lengths), read(bm25)
        )


def log_prior(train_votes: int) -> float:
    """The prior feature: log(1 + how many supervising queries judged the document)."""
    return math.log1p(max(float(train_votes), 0.0))
