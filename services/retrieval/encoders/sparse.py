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
from dataclasses import dataclass

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


def encode_documents(texts: Sequence[str], params: Bm25Params = Bm25Params()) -> list[SparseVector]:
    """BM25-weighted sparse vectors for a whole corpus (IDF needs all of it at once)."""
    bags = [Counter(analyze(t)) for t in texts]
    n_docs = len(bags)
    avgdl = sum(sum(bag.values()) for bag in bags) / max(n_docs, 1)
    df: Counter[str] = Counter()
    for bag in bags:
        df.update(bag.keys())
    vectors = []
    for bag in bags:
        dl = sum(bag.values())
        norm = params.k1 * (1 - params.b + params.b * dl / avgdl) if avgdl else params.k1
        merged = _merge(bag)
        values = []
        for term, tf in merged.values():
            values.append(idf(n_docs, df[term]) * tf * (params.k1 + 1) / (tf + norm))
        vectors.append(SparseVector(list(merged), values))
    return vectors
