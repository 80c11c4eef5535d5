"""Ranking measures with the standard trec_eval definitions.

trec_eval calls them measures; in this repository, "metrics" are what Prometheus scrapes.

NDCG@k uses the qrel grade as gain with a log2 discount, and the ideal DCG from *all* judged
documents of the query (not only the retrieved ones). :func:`ndcg_at_k_retrieved_ideal` is the
variant AgentBeats' evaluator reports, whose ideal comes from the retrieved list only; it is kept
apart and always labelled, because it is never lower than the standard one.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from statistics import fmean

Run = Mapping[str, Sequence[str]]
Judged = Mapping[str, Mapping[str, int]]


def _dcg(gains: Sequence[float]) -> float:
    return sum(g / math.log2(i + 2) for i, g in enumerate(gains))


def ndcg_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """trec_eval ``ndcg_cut_k`` for one query."""
    ideal = _dcg(sorted((g for g in judged.values() if g > 0), reverse=True)[:k])
    if ideal == 0:
        return 0.0
    return _dcg([judged.get(d, 0) for d in ranked[:k]]) / ideal


def ndcg_at_k_retrieved_ideal(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """AgentBeats variant: the ideal DCG re-sorts the retrieved top-k gains only."""
    gains = [judged.get(d, 0) for d in ranked[:k]]
    ideal = _dcg(sorted(gains, reverse=True))
    return _dcg(gains) / ideal if ideal > 0 else 0.0


def recall_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """Share of the relevant documents found in the top k."""
    relevant = {d for d, g in judged.items() if g > 0}
    return len(relevant.intersection(ranked[:k])) / len(relevant) if relevant else 0.0


def precision_at_k(ranked: Sequence[str], judged: Mapping[str, int], k: int) -> float:
    """Share of the top k that is relevant (trec_eval divides by k, not by the list length)."""
    return sum(1 for d in ranked[:k] if judged.get(d, 0) > 0) / k


def reciprocal_rank(ranked: Sequence[str], judged: Mapping[str, int]) -> float:
    """1 / rank of the first relevant document (0 when none is retrieved)."""
    for i, d in enumerate(ranked):
        if judged.get(d, 0) > 0:
            return 1.0 / (i + 1)
    return 0.0


def mean_over_queries(run: Run, qrels: Judged, metric: str, k: int | None = None) -> float:
    """Mean of one metric over every judged query of ``qrels`` (a missing run counts as 0).

    ``metric`` is one of ``ndcg``, ``recall``, ``precision``, ``mrr``.
    """
    values = [per_query(run.get(q, ()), judged, metric, k) for q, judged in qrels.items()]
    return fmean(values) if values else 0.0


def per_query(
    ranked: Sequence[str], judged: Mapping[str, int], metric: str, k: int | None
) -> float:
    """One metric for one query; see :func:`mean_over_queries`."""
    if metric == "mrr":
        return reciprocal_rank(ranked if k is None else ranked[:k], judged)
    if k is None:
        raise ValueError(f"{metric} needs a cut-off k")
    functions = {"ndcg": ndcg_at_k, "recall": recall_at_k, "precision": precision_at_k}
    if metric not in functions:
        raise ValueError(f"unknown metric {metric!r}")
    return functions[metric](ranked, judged, k)
