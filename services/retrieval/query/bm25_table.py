"""BM25 over many short texts held in memory (titles, voting queries), as per-term postings.

The same formula as the documents' sparse vectors (:mod:`services.retrieval.encoders.sparse`), with
Anserini's k1 and b, the values the ranker lab measured these features with. A query's scores
are summed in sorted term order, so every process gets the same bits whatever its hash seed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from services.retrieval.encoders.sparse import Bm25Params, idf

SHORT_TEXTS = Bm25Params(k1=0.9, b=0.4)

Rows = npt.NDArray[np.int64]


class Bm25Table:
    """Each term's rows (texts holding it) and their BM25 weights, IDF included."""

    def __init__(self, texts: Sequence[Sequence[str]], params: Bm25Params = SHORT_TEXTS) -> None:
        """Index ``texts`` (analyzed terms, repeats kept); row ``i`` is ``texts[i]``."""
        k1, b = params.k1, params.b
        self.lengths = np.array([len(t) for t in texts], dtype=np.float64)
        lengths = self.lengths
        average = float(lengths.mean()) if len(lengths) and lengths.mean() > 0 else 1.0
        norm = k1 * (1 - b + b * lengths / average)
        postings: dict[str, tuple[list[int], list[float]]] = {}
        for i, terms in enumerate(texts):
            for term, tf in Counter(terms).items():
                rows, weights = postings.setdefault(term, ([], []))
                rows.append(i)
                weights.append(tf * (k1 + 1) / (tf + norm[i]))
        self.size = len(texts)
        self._postings = {
            term: (np.array(rows, dtype=np.int64), np.array(weights) * idf(self.size, len(rows)))
            for term, (rows, weights) in postings.items()
        }

    def rows(self, term: str) -> Rows | None:
        """The rows holding ``term`` (None when none does)."""
        posting = self._postings.get(term)
        return None if posting is None else posting[0]

    def scores(self, query_terms: Sequence[str]) -> npt.NDArray[np.float64]:
        """Every row's BM25 score for a query of ``query_terms`` (each distinct term once)."""
        scores = np.zeros(self.size)
        for term in sorted(set(query_terms)):  # one summation order, whatever the hash seed
            if (posting := self._postings.get(term)) is not None:
                scores[posting[0]] += posting[1]
        return scores
