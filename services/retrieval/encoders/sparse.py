"""BM25 as Qdrant sparse vectors.

Documents carry the full BM25 term weight, IDF included, computed at index time:
``idf(t) * tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / avgdl))`` with Lucene's
``idf = ln(1 + (N - df + 0.5) / (df + 0.5))``. A query is the bag of its analyzed terms (weight =
count), so the sparse dot product Qdrant computes *is* the BM25 score. Computing IDF here rather
than with Qdrant's IDF modifier keeps the scores identical on the embedded engine and on a sharded
server (where the modifier would see per-shard statistics); on dev both give the same NDCG since
the formula is the same (see docs/retrieval.md).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

from services.retrieval.text import analyze, term_index
from services.retrieval.types import SparseVector


@dataclass(frozen=True, slots=True)
class Bm25Params:
    """BM25 saturation (k1) and length normalisation (b), chosen on dev queries."""

    k1: float = 1.2
    b: float = 0.75


def idf(n_docs: int, df: int) -> float:
    """Lucene's BM25 IDF of a term found in ``df`` of ``n_docs`` texts."""
    return math.log(1 + (n_docs - df + 0.5) / (df + 0.5))


def _merge(counts: Counter[str]) -> dict[int, tuple[str, int]]:
    # Two terms hashing to one index is rare (CRC32 over ~30k terms); keep their counts summed so
    # the vector stays valid, and remember one term for the df lookup.
    merged: dict[int, tuple[str, int]] = {}
    for term, tf in counts.items():
        idx = term_index(term)
        prev = merged.get(idx)
        merged[idx] = (term, tf + (prev[1] if prev else 0))
    return merged


def query_vector(terms: Sequence[str]) -> SparseVector:
    """The query side: each of the query's analyzed ``terms`` with its count."""
    merged = _merge(Counter(terms))
    return SparseVector(list(merged), [float(tf) for _, tf in merged.values()])


@dataclass(slots=True)
class TermStats:
    """What BM25 weighs a document's terms by: the corpus's size, total length and each df.

    Filled one document at a time (a build's first pass over the corpus); its size grows with
    the vocabulary, never with the documents.
    """

    documents: int = 0
    length: int = 0
    df: Counter[str] = field(default_factory=Counter)

    def add(self, bag: Counter[str]) -> None:
        """Count one document's analyzed terms."""
        self.documents += 1
        self.length += sum(bag.values())
        self.df.update(bag.keys())

    @property
    def average_length(self) -> float:
        """Mean document length in terms (0.0 for an empty corpus)."""
        # Whole numbers summed, then one division: the same float however the corpus is read.
        return self.length / max(self.documents, 1)


def document_vector(
    bag: Counter[str], stats: TermStats, params: Bm25Params = Bm25Params()
) -> SparseVector:
    """One document's BM25-weighted sparse vector, weighed by the whole corpus's ``stats``."""
    avgdl = stats.average_length
    dl = sum(bag.values())
    norm = params.k1 * (1 - params.b + params.b * dl / avgdl) if avgdl else params.k1
    merged = _merge(bag)
    values = [
        idf(stats.documents, stats.df[term]) * tf * (params.k1 + 1) / (tf + norm)
        for term, tf in merged.values()
    ]
    return SparseVector(list(merged), values)


def encode_documents(texts: Sequence[str], params: Bm25Params = Bm25Params()) -> list[SparseVector]:
    """BM25-weighted sparse vectors for a whole corpus held in memory (tests, small corpora)."""
    bags = [Counter(analyze(t)) for t in texts]
    stats = TermStats()
    for bag in bags:
        stats.add(bag)
    return [document_vector(bag, stats, params) for bag in bags]
