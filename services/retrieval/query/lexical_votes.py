"""The lexical kNN view: votes of the voting queries whose *words* are nearest to the query.

The dense kNN votes (:mod:`services.retrieval.query.knn`) find neighbours by MiniLM similarity. Many
NFCorpus queries are titles of pages on one topic and share rare words ("flaxseed", "arsenic")
that a small sentence model blurs; BM25 over the voting queries' texts finds those neighbours
too. The ``k`` nearest by BM25 vote for the documents they judged relevant, with weight
``(score / best score) ** power`` times the grade. Measured in the ranker lab (docs/quality.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from services.retrieval.query.bm25_table import Bm25Table
from services.retrieval.query.judgements import Judgements, positions

# As measured in the ranker lab (docs/quality.md).
NEIGHBOURS, POWER = 10, 2.0


@dataclass(frozen=True, slots=True)
class LexicalColumns:
    """Lexical votes of some candidates: weighted votes, voter counts, the best BM25 score."""

    vote: npt.NDArray[np.float64]
    voters: npt.NDArray[np.float64]
    top_score: float


class LexicalVoters:
    """BM25 over the voting queries' analyzed texts, and their votes through ``judgements``."""

    def __init__(self, terms: Mapping[str, Sequence[str]], judgements: Judgements) -> None:
        """Index ``terms`` (voting query id -> analyzed text) in ``judgements``' query order."""
        self._judgements = judgements
        order = judgements.queries
        self._queries = Bm25Table([terms.get(q, ()) for q in order])
        # Each row's place in query id order: ties break by id, not by the store's scroll order.
        self._by_id = np.argsort(np.argsort(np.array(order, dtype=object), kind="stable"))

    def columns(
        self, query_terms: Sequence[str], doc_ids: Sequence[str], exclude_query: str | None = None
    ) -> LexicalColumns:
        """Votes for ``doc_ids`` from the :data:`NEIGHBOURS` nearest voting queries by BM25.

        ``exclude_query`` (a voting query itself, in training) takes no part: leave-one-out.
        """
        scores = self._queries.scores(query_terms)
        own = self._judgements.query_index.get(exclude_query) if exclude_query else None
        if own is not None:
            scores[own] = 0.0
        matched = np.flatnonzero(scores > 0)
        # Best first, ties by query id: every process and store picks the same neighbours.
        nearest = matched[np.lexsort((self._by_id[matched], -scores[matched]))][:NEIGHBOURS]
        empty = np.zeros(len(doc_ids))
        if len(nearest) == 0:
            return LexicalColumns(empty, empty.copy(), 1.0)
        top = float(scores[nearest[0]])
        matrix, width = self._judgements.matrix, len(self._judgements.docs)
        vote, voters = np.zeros(width), np.zeros(width)
        for row in nearest:  # in rank order: the sums add in one order
            start, end = matrix.indptr[row], matrix.indptr[row + 1]
            docs = matrix.indices[start:end]
            vote[docs] += (scores[row] / top) ** POWER * matrix.data[start:end]
            voters[docs] += 1
        at, known = positions(self._judgements.doc_index, doc_ids)
        return LexicalColumns(
            np.where(known, vote[at] if width else 0.0, 0.0),
            np.where(known, voters[at] if width else 0.0, 0.0),
            top,
        )
