"""The collaborative signal: the nearest training queries vote for the documents they judged.

NFCorpus queries come from NutritionFacts pages that link to the same articles, so a new query's
nearest *training* queries point at its relevant documents: each of the ``k`` nearest training
queries votes for the documents its qrels mark relevant, with weight ``similarity ** power``
times the grade. The training queries live in a Qdrant collection of their own
(:mod:`services.retrieval.query.version_records`); this module is the vote arithmetic.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from services.retrieval.query.judgements import Judgements, positions


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
        parts = [(judgements.row(q), rank, sim) for rank, (q, sim) in enumerate(kept, start=1)]
        n = len(judgements.docs)
        docs = np.concatenate([cols for (cols, _), _, _ in parts]) if parts else np.zeros(0, int)
        grades = np.concatenate([g for (_, g), _, _ in parts]) if parts else np.zeros(0)
        ranks = np.concatenate([np.full(len(c), r) for (c, _), r, _ in parts]) if parts else docs
        sims = np.concatenate([np.full(len(c), s) for (c, _), _, s in parts]) if parts else grades
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
        docs = self._judgements.docs
        return [docs[i] for i in self._order[:n]]

    @property
    def ranked(self) -> list[str]:
        """Every voted document, best first."""
        return self.top()

    def columns(self, doc_ids: Sequence[str]) -> VoteColumns:
        """The votes of ``doc_ids`` as arrays, one entry per id (unknown ids have no vote)."""
        at, known = positions(self._judgements.doc_index, doc_ids)
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
