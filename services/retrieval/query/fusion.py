"""Score fusion of several ranked lists.

Measured on dev (docs/retrieval.md): normalized-score fusion beats reciprocal-rank fusion here,
because BM25 and cosine scores carry how *sure* each retriever is, which RRF throws away.
A document missing from one list gets that list's lowest normalized score: it ranked below every
candidate there, and "below the lowest" is the most we know.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from statistics import fmean, pstdev
from typing import Literal

Normalization = Literal["zscore", "minmax"]


def normalize(scores: Mapping[str, float], how: Normalization) -> dict[str, float]:
    """Scores of one list mapped to a common scale."""
    if not scores:
        return {}
    values = list(scores.values())
    if how == "zscore":
        mean, spread = fmean(values), pstdev(values)
        return {k: (v - mean) / spread if spread > 0 else 0.0 for k, v in scores.items()}
    low, high = min(values), max(values)
    return {k: (v - low) / (high - low) if high > low else 1.0 for k, v in scores.items()}


def fuse(
    lists: Sequence[Mapping[str, float]], weights: Sequence[float], how: Normalization
) -> list[tuple[str, float]]:
    """Weighted sum of normalized scores over the union of candidates, best first."""
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
    # Ties broken by key so the order is reproducible run to run.
    return sorted(fused.items(), key=lambda kv: (-kv[1], kv[0]))
