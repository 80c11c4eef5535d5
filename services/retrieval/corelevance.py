"""Co-relevance: documents that the voting queries judged relevant *together*.

NFCorpus judgements come from the citation lists of NutritionFacts articles, so documents cited
together tend to be relevant together. The first hybrid results (the seeds) spread their weight
to every voting query that judged them relevant, and each such query passes it on to all of its
relevant documents: ``score = Aᵀ · W · A · seeds``, with ``A`` the query x document judgement
matrix and ``W`` down-weighting queries with long lists (1 / ln(1 + n)). On dev this one signal
scores NDCG@10 0.40 from the top 10 hybrid results alone (docs/quality.md).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp

Vector = npt.NDArray[np.float64]


class CoRelevance:
    """The judgement matrix of the voting queries, ready for one sparse product per query."""

    def __init__(self, judgements: Mapping[str, Mapping[str, int]], docs: Sequence[str]) -> None:
        """Index ``judgements`` (query -> relevant docs) over the document ids ``docs``."""
        self._docs = list(docs)
        self.doc_index = {d: i for i, d in enumerate(docs)}
        self.query_index = {q: i for i, q in enumerate(judgements)}
        rows, cols = [], []
        for q, judged in judgements.items():
            for d in judged:
                if d in self.doc_index:
                    rows.append(self.query_index[q])
                    cols.append(self.doc_index[d])
        shape = (len(self.query_index), len(self.doc_index))
        self._a = sp.csr_matrix((np.ones(len(rows)), (rows, cols)), shape=shape)
        self._at = self._a.T.tocsr()
        lengths = np.asarray(self._a.sum(axis=1)).ravel()
        self._weights = 1.0 / np.log1p(np.maximum(lengths, 1.0))

    def scores(self, seeds: Mapping[str, float], exclude_query: str | None = None) -> CoScores:
        """Co-relevance of every document to the weighted ``seeds`` (doc id -> weight).

        ``exclude_query`` (a training query) takes no part: leave-one-out.
        """
        w = np.zeros(len(self.doc_index))
        for d, weight in seeds.items():
            i = self.doc_index.get(d)
            if i is not None:
                w[i] = weight
        per_query: Vector = self._a @ w * self._weights
        if exclude_query is not None and exclude_query in self.query_index:
            per_query[self.query_index[exclude_query]] = 0.0
        spread: Vector = self._at @ per_query
        return CoScores(self.doc_index, spread)


class CoScores:
    """Co-relevance scores of one query, by doc id, with each document's rank among all."""

    def __init__(self, index: Mapping[str, int], values: Vector) -> None:
        """Wrap the score vector (``index`` maps doc ids to positions)."""
        self._index = index
        self._values = values
        order = np.argsort(-values, kind="stable")
        self._ranks = np.empty(len(values), dtype=np.int64)
        self._ranks[order] = np.arange(1, len(values) + 1)

    def score(self, doc_id: str) -> float:
        """The document's score (0 for unknown documents)."""
        i = self._index.get(doc_id)
        return float(self._values[i]) if i is not None else 0.0

    def rank(self, doc_id: str) -> int:
        """1-based rank among all documents (unknown documents rank last)."""
        i = self._index.get(doc_id)
        return int(self._ranks[i]) if i is not None else len(self._values) + 1


def seeds(rankings: Sequence[Sequence[str]], n: int = 10, k: int = 60) -> dict[str, float]:
    """The ``n`` best documents by reciprocal-rank fusion of ``rankings``, weighted 1 / rank."""
    fused: dict[str, float] = {}
    for ranking in rankings:
        for rank, d in enumerate(ranking, start=1):
            fused[d] = fused.get(d, 0.0) + 1.0 / (k + rank)
    best = sorted(fused, key=lambda d: (-fused[d], d))[:n]
    return {d: 1.0 / rank for rank, d in enumerate(best, start=1)}
