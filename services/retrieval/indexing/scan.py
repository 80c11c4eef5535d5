"""A build's first pass over the corpus: what every document's points need from all the others.

BM25's weights need each term's document frequency and the mean length over the whole corpus,
the ranker's title statistics likewise, and a document's ``ordinal`` its place among all doc
ids; nothing else in a build looks past the document at hand. This pass reads the corpus once,
one document at a time, and keeps only those statistics (which grow with the vocabulary), the
doc ids as one array (a few dozen bytes a document, for the ordinals) and the point ids of the
documents the training queries judged. The second pass (:mod:`.chunks`) then writes the
documents chunk by chunk.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Set
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from services.nfcorpus.dataset import Document
from services.retrieval.encoders.sparse import TermStats
from services.retrieval.query.bm25_table import FieldCounts, FieldStats
from services.retrieval.text import analyze, document_text


@dataclass(frozen=True, slots=True)
class CorpusScan:
    """The whole corpus's statistics, for writing any of its documents."""

    documents: int
    terms: TermStats
    titles: FieldStats
    #: Each document's place among the corpus's doc ids in sorted order, by point id.
    ordinals: npt.NDArray[np.int64]
    #: doc id -> point id, for the documents the training queries judged (the kNN payloads).
    numbers: dict[str, int]


def scan_corpus(documents: Iterable[Document], judged: Set[str] = frozenset()) -> CorpusScan:
    """Read ``documents`` once (the corpus's order is the point ids' order)."""
    terms = TermStats()
    titles = FieldCounts()
    ids: list[str] = []
    numbers: dict[str, int] = {}
    for number, doc in enumerate(documents):
        terms.add(Counter(analyze(document_text(doc))))
        titles.add(analyze(doc.title))
        ids.append(doc.doc_id)
        if doc.doc_id in judged:
            numbers[doc.doc_id] = number
    return CorpusScan(len(ids), terms, titles.stats(), ordinals(ids), numbers)


def ordinals(doc_ids: list[str]) -> npt.NDArray[np.int64]:
    """Each id's place among ``doc_ids`` in sorted order (a document's ``ordinal``).

    A ranking breaks ties between equal scores by doc id; with the ordinals of its candidates
    it does so without naming them, and ranks a document among the whole corpus by id
    without holding the corpus's ids.
    """
    # A stable sort, as Python's sorted(): equal ids (none in a valid corpus) keep file order.
    by_id = np.argsort(np.array(doc_ids, dtype=np.str_), kind="stable")
    places = np.empty(len(doc_ids), dtype=np.int64)
    places[by_id] = np.arange(len(doc_ids), dtype=np.int64)
    return places
