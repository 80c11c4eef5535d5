"""Score fusion: ranked lists of one query merged into one, on normalized scores.

:func:`fuse` normalizes scores rather than ranks: BM25 and cosine scores carry how *sure* each
retriever is, which reciprocal-rank fusion throws away (measured in docs/retrieval.md). A
document missing from one list gets that list's lowest normalized score: it ranked below every
candidate there, and "below the lowest" is the most we know.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from operator import itemgetter
from statistics import fmean, pstdev
from typing import Literal, TypeVar

from services.nfcorpus.ranking import break_ties

Normalization = Literal["zscore", "minmax"]
#: What fused lists are keyed by: doc ids, or point ids of one collection (ties break by key).
K = TypeVar("K", bound=int | str)
_SCORE = itemgetter(1)
_KEY = itemgetter(0)


def normalize(scores: Mapping[K, float], how: Normalization) -> dict[K, float]:
    """Scores of one list mapped to a common scale."""
    if not scores:
        return {}
    values = list(scores.values())
    if how == "zscore":
        mean, spread = fmean(values), pstdev(values)
        return {k: (v - mean) / spread if spread > 0 else 0.0 for k, v in scores.items()}
    low, high = min(values), max(values)
    return {k: (v - low) / (high - low) if high > low else 1.0 for k, v in scores.items()}


def best_first(scores: Mapping[K, float], limit: int | None = None) -> list[tuple[K, float]]:
    """The ``limit`` best ``(key, score)`` pairs (all of them by default), ties in key order."""
    ranked = sorted(scores.items(), key=_SCORE, reverse=True)  # stable: ties keep their order
    return break_ties(ranked, len(ranked) if limit is None else limit, _SCORE, _KEY)


def fuse(
    lists: Sequence[Mapping[K, float]],
    weights: Sequence[float],
    how: Normalization,
    limit: int | None = None,
) -> list[tuple[K, float]]:
    """Weighted sum of normalized scores over the union of candidates, the ``limit`` best first."""
    if len(lists) != len(weights):
        raise ValueError("one weight per list")
    normalized = [normalize(scores, how) for scores in lists]
    floors = [min(n.values(), default=0.0) for n in normalized]
    union = {key for n in normalized for key in n}
    fused = {
        key: sum(
            w * n.get(key, floor) for n, w, floor in zip(normalized, weights, floors, strict=True)
        )
        for key in union
    }
    return best_first(fused, limit)
