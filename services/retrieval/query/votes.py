"""Votes of the voting queries nearest the query, for the documents they judged relevant.

NFCorpus queries come from NutritionFacts pages that link to the same articles, so a new query's
nearest *training* queries point at its relevant documents. Two views find the neighbours:

- by MiniLM similarity (:class:`VoteTable`): each of the ``k`` nearest voting queries votes for
  the documents its qrels mark relevant, with weight ``similarity ** power`` times the grade;
- by their *words* (:class:`LexicalVoters`): many NFCorpus queries are titles of pages on one
  topic and share rare words ("flaxseed", "arsenic") that a small sentence model blurs; BM25
  over the voting queries' texts finds those neighbours too. The :data:`LEXICAL_NEIGHBOURS`
  nearest by BM25 vote with weight ``(score / best score) ** LEXICAL_POWER`` times the grade.

The voting queries live in a Qdrant collection of their own
(:mod:`services.retrieval.query.index_version`); this module is the vote arithmetic, over their
judgements read once per index version (:mod:`services.retrieval.query.judgements`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from services.retrieval.query.bm25_table import Bm25Table
from services.retrieval.query.judgements import Judgements, Located

# The lexical view's neighbours and power, chosen in the ranker lab (docs/quality.md).
LEXICAL_NEIGHBOURS, LEXICAL_POWER = 10, 2.0


@dataclass(frozen=True, slots=True)
class Vote:
    """What the neighbours said about one document."""

    score: float  # sum of similarity ** power * grade
    voters: int
    best_similarity: float  # similarity of the nearest neighbour voting for it
    nearest_rank: int  # rank (1-based) of that neighbour
    max_grade: int
    rank: int  # 1-based rank by score among all voted documents (ties by doc id)


@dataclass(frozen=True, slots=True)
class VoteColumns:
    """:class:`Vote` fields of several documents, as arrays; meaningful where ``voted``."""

    voted: npt.NDArray[np.bool_]
    score: npt.NDArray[np.float64]
    voters: npt.NDArray[np.int64]
    best_similarity: npt.NDArray[np.float64]
    nearest_rank: npt.NDArray[np.int64]
    max_grade: npt.NDArray[np.float64]
    rank: npt.NDArray[np.int64]


class VoteTable:
    """Votes for every document at once (arrays over the judgement matrix's documents)."""

    def __init__(
        self,
        judgements: Judgements,
        neighbours: Sequence[tuple[str, float]],
        k: int,
        power: float,
        exclude_query: str | None = None,
    ) -> None:
        """Tally the ``k`` nearest ``(query id, similarity)``, ``exclude_query`` left out."""
        self._judgements = judgements
        kept = [(q, sim) for q, sim in neighbours if q != exclude_query][:k]
        rows = [judgements.row(q) for q, _ in kept]
        n = len(judgements.doc_ids)
        docs = np.concatenate([cols for cols, _ in rows]) if rows else np.zeros(0, int)
        grades = np.concatenate([g for _, g in rows]) if rows else np.zeros(0)
        # Each judgement carries its voter's rank (1-based) and similarity.
        lengths = [len(cols) for cols, _ in rows]
        ranks = np.repeat(np.arange(1, len(rows) + 1), lengths)
        sims = np.repeat(np.array([sim for _, sim in kept], dtype=np.float64), lengths)
        weights = np.maximum(sims, 0.0) ** power * grades
        # float64: the weights are (np.bincount is typed as if it always counted)
        self.score: npt.NDArray[np.float64] = np.bincount(docs, weights=weights, minlength=n)  # type: ignore[assignment]
        self.voters = np.bincount(docs, minlength=n)
        self.max_grade = np.zeros(n)
        np.maximum.at(self.max_grade, docs, grades)
        # Neighbours come nearest first: a document's first occurrence is its nearest voter.
        voted, first = np.unique(docs, return_index=True)
        self.nearest_rank = np.zeros(n, dtype=np.int64)
        self.best_similarity = np.zeros(n)
        self.nearest_rank[voted] = ranks[first]
        self.best_similarity[voted] = sims[first]
        # Documents are indexed in id order, so a stable sort on -score breaks ties by doc id.
        self._order = voted[np.argsort(-self.score[voted], kind="stable")]
        self.rank = np.zeros(n, dtype=np.int64)
        self.rank[self._order] = np.arange(1, len(self._order) + 1)

    def __len__(self) -> int:
        """Number of documents with a vote."""
        return len(self._order)

    def top(self, n: int | None = None) -> list[str]:
        """The ``n`` most-voted documents (all voted ones without ``n``), best first.

        Named on demand: a query's neighbours vote for hundreds of documents, the ranker's
        candidates take the first hundred.
        """
        doc_ids = self._judgements.doc_ids
        return [doc_ids[i] for i in self._order[:n]]

    @property
    def ranked(self) -> list[str]:
        """Every voted document, best first."""
        return self.top()

    def top_at(self, n: int) -> npt.NDArray[np.int64]:
        """The ``n`` most-voted documents' columns in the judgement matrix, best first."""
        return self._order[:n]

    def columns(self, doc_ids: Sequence[str] | Located) -> VoteColumns:
        """The votes of ``doc_ids`` as arrays, one entry per id (unknown ids have no vote)."""
        located = Located.of(self._judgements.doc_index, doc_ids)
        at, known = located.at, located.known
        return VoteColumns(
            voted=known & (self.voters[at] > 0),
            score=self.score[at],
            voters=self.voters[at],
            best_similarity=self.best_similarity[at],
            nearest_rank=self.nearest_rank[at],
            max_grade=self.max_grade[at],
            rank=self.rank[at],
        )

    def get(self, doc_id: str) -> Vote | None:
        """The vote for one document, if it has one."""
        i = self._judgements.doc_index.get(doc_id)
        if i is None or self.voters[i] == 0:
            return None
        return Vote(
            float(self.score[i]),
            int(self.voters[i]),
            float(self.best_similarity[i]),
            int(self.nearest_rank[i]),
            int(self.max_grade[i]),
            int(self.rank[i]),
        )

    @property
    def top_score(self) -> float:
        """The best document's score (0 without votes)."""
        return float(self.score.max()) if len(self) else 0.0

    @property
    def nearest_similarity(self) -> float:
        """Similarity of the nearest voting neighbour (NaN without votes)."""
        return float(self.best_similarity.max()) if len(self) else float("nan")


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
        self,
        query_terms: Sequence[str],
        doc_ids: Sequence[str] | Located,
        exclude_query: str | None = None,
    ) -> LexicalColumns:
        """Votes for ``doc_ids`` from the :data:`LEXICAL_NEIGHBOURS` nearest voting queries by BM25.

        ``exclude_query`` (a voting query itself, in training) takes no part: leave-one-out.
        """
        scores = self._queries.scores(query_terms)
        own = self._judgements.query_index.get(exclude_query) if exclude_query else None
        if own is not None:
            scores[own] = 0.0
        matched = np.flatnonzero(scores > 0)
        # Best first, ties by query id: every process and store picks the same neighbours.
        nearest = matched[np.lexsort((self._by_id[matched], -scores[matched]))][:LEXICAL_NEIGHBOURS]
        empty = np.zeros(len(doc_ids))
        if len(nearest) == 0:
            return LexicalColumns(empty, empty.copy(), 1.0)
        top = float(scores[nearest[0]])
        matrix, width = self._judgements.matrix, len(self._judgements.doc_ids)
        vote, voters = np.zeros(width), np.zeros(width)
        for row in nearest:  # in rank order: the sums add in one order
            start, end = matrix.indptr[row], matrix.indptr[row + 1]
            docs = matrix.indices[start:end]
            vote[docs] += (scores[row] / top) ** LEXICAL_POWER * matrix.data[start:end]
            voters[docs] += 1
        located = Located.of(self._judgements.doc_index, doc_ids)
        at, known = located.at, located.known
        return LexicalColumns(
            np.where(known, vote[at] if width else 0.0, 0.0),
            np.where(known, voters[at] if width else 0.0, 0.0),
            top,
        )
