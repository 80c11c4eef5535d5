"""BM25 over many short texts held in memory (titles, voting queries), as per-term postings.

The same formula as the documents' sparse vectors (:mod:`services.retrieval.encoders.sparse`), with
Anserini's k1 and b, the values the ranker lab measured these features with. A query's scores
are summed in sorted term order, so every process gets the same bits whatever its hash seed.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from services.retrieval.encoders.sparse import Bm25Params, idf

SHORT_TEXTS = Bm25Params(k1=0.9, b=0.4)

Rows = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class FieldStats:
    """A field's statistics over a whole collection: how many texts, their mean length, each df.

    A table of some of the texts (:class:`Bm25Table`) scores them as the whole collection's
    statistics weigh them.
    """

    texts: int
    average: float
    df: Mapping[str, int]

    @classmethod
    def of(cls, texts: Iterable[Sequence[str]]) -> FieldStats:
        """The statistics of these analyzed texts (repeats kept, as BM25 counts them)."""
        counts = FieldCounts()
        for terms in texts:
            counts.add(terms)
        return counts.stats()

    def to_payload(self) -> dict[str, Any]:
        """As stored (:meth:`from_payload` reads it back; the mean by its exact ``repr``)."""
        df = dict(sorted(self.df.items()))
        return {"texts": self.texts, "average": repr(self.average), "df": df}

    @classmethod
    def from_payload(cls, payload: Mapping[str, Any]) -> FieldStats:
        """The statistics as :meth:`to_payload` stored them."""
        df = {str(t): int(n) for t, n in dict(payload["df"]).items()}
        return cls(int(payload["texts"]), float(payload["average"]), df)

    def idf(self, term: str) -> float:
        """The field's BM25 IDF of ``term``."""
        return idf(self.texts, self.df.get(term, 0))


@dataclass(slots=True)
class FieldCounts:
    """:class:`FieldStats` gathered one text at a time (a build's pass over the corpus)."""

    texts: int = 0
    length: int = 0
    df: Counter[str] = field(default_factory=Counter)

    def add(self, terms: Sequence[str]) -> None:
        """Count one analyzed text."""
        self.texts += 1
        self.length += len(terms)
        self.df.update(set(terms))

    def stats(self) -> FieldStats:
        """The statistics of the texts counted (a mean length of 1.0 where there are none)."""
        # Whole-number lengths add up exactly in any order: the mean of any pass over them.
        mean = self.length / self.texts if self.texts else 0.0
        return FieldStats(self.texts, mean if mean > 0 else 1.0, dict(self.df))


def text_score(
    terms: Sequence[str],
    query_terms: Iterable[str],
    stats: FieldStats,
    params: Bm25Params = SHORT_TEXTS,
) -> float:
    """BM25 of a query over one text outside a table, as :meth:`Bm25Table.scores` scores a row.

    The same operations in the same order (each distinct query term once, in sorted order), so
    the same bits.
    """
    k1, b = params.k1, params.b
    norm = k1 * (1 - b + b * len(terms) / stats.average)
    counts = Counter(terms)
    score = 0.0
    for term in sorted(set(query_terms)):
        if tf := counts.get(term):
            score += tf * (k1 + 1) / (tf + norm) * stats.idf(term)
    return score


class Bm25Table:
    """Each term's rows (texts holding it) and their BM25 weights, IDF included."""

    def __init__(
        self,
        texts: Sequence[Sequence[str]],
        params: Bm25Params = SHORT_TEXTS,
        stats: FieldStats | None = None,
    ) -> None:
        """Index ``texts`` (analyzed terms, repeats kept); row ``i`` is ``texts[i]``.

        ``stats`` are the whole collection's when ``texts`` are some of it (else their own).
        """
        k1, b = params.k1, params.b
        self.lengths = np.array([len(t) for t in texts], dtype=np.float64)
        lengths = self.lengths
        if stats is None:
            average = float(lengths.mean()) if len(lengths) and lengths.mean() > 0 else 1.0
        else:
            average = stats.average
        norm = k1 * (1 - b + b * lengths / average)
        postings: dict[str, tuple[list[int], list[float]]] = {}
        for i, terms in enumerate(texts):
            for term, tf in Counter(terms).items():
                rows, weights = postings.setdefault(term, ([], []))
                rows.append(i)
                weights.append(tf * (k1 + 1) / (tf + norm[i]))
        self.size = len(texts)
        self._postings = {
            term: (
                np.array(rows, dtype=np.int64),
                np.array(weights) * (stats.idf(term) if stats else idf(self.size, len(rows))),
            )
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
