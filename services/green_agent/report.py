"""Evaluation report: ranking metrics, their spread, latency, throughput and every failure.

Ranking metrics use the standard trec_eval definitions from :mod:`services.nfcorpus.measures`
and are means over *every sampled query*: a query without a valid reply scores 0, as a missing
run does in trec_eval. ``agentbeats_ndcg@k`` is the AgentBeats evaluator's variant, whose ideal
DCG comes from the retrieved list only; it is reported apart because it is never lower.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel

from services.green_agent.evaluator import QueryOutcome
from services.nfcorpus.dataset import Qrels
from services.nfcorpus.measures import ndcg_at_k_retrieved_ideal, per_query

CUTOFFS = (5, 10)


class LatencyStats(BaseModel):
    """Latency percentiles in seconds (linear interpolation between ranks)."""

    count: int
    mean_s: float
    p50_s: float
    p95_s: float
    p99_s: float
    max_s: float


class Spread(BaseModel):
    """Distribution of a per-query metric."""

    mean: float
    median: float
    std: float
    min: float
    max: float


class Failure(BaseModel):
    """One query without a valid reply."""

    query_id: str
    reason: str
    message: str


class QueryScore(BaseModel):
    """Per-query detail kept in the JSON report."""

    query_id: str
    latency_s: float
    doc_ids: list[str] | None
    ndcg: dict[str, float]


class EvalReport(BaseModel):
    """Everything one evaluation run measured."""

    agent: str
    protocol: str
    top_k: int
    seed: int
    num_queries: int
    answered: int
    failed: int
    metrics: dict[str, float]
    ndcg_spread: dict[str, Spread]
    latency: LatencyStats
    throughput_qps: float
    wall_s: float
    failures_by_reason: dict[str, int]
    failures: list[Failure]
    notes: list[str]
    queries: list[QueryScore]


def percentile(values: Sequence[float], p: float) -> float:
    """Return the ``p``-th percentile (0..100) of ``values``, linearly interpolated (0 if empty)."""
    ordered = sorted(values)
    if not ordered:
        return 0.0
    rank = (len(ordered) - 1) * p / 100
    low = math.floor(rank)
    high = min(low + 1, len(ordered) - 1)
    return ordered[low] + (ordered[high] - ordered[low]) * (rank - low)


def latency_stats(values: Sequence[float]) -> LatencyStats:
    """Summary of latencies in seconds."""
    return LatencyStats(
        count=len(values),
        mean_s=statistics.fmean(values) if values else 0.0,
        p50_s=percentile(values, 50),
        p95_s=percentile(values, 95),
        p99_s=percentile(values, 99),
        max_s=max(values, default=0.0),
    )


def spread(values: Sequence[float]) -> Spread:
    """Mean, median, population standard deviation, min and max."""
    if not values:
        return Spread(mean=0.0, median=0.0, std=0.0, min=0.0, max=0.0)
    return Spread(
        mean=statistics.fmean(values),
        median=statistics.median(values),
        std=statistics.pstdev(values),
        min=min(values),
        max=max(values),
    )


def _notes(top_k: int) -> list[str]:
    notes = [
        "ndcg@k, precision@k, recall@k, mrr: trec_eval definitions, mean over every sampled "
        "query; a query without a valid reply scores 0.",
        "agentbeats_ndcg@k: AgentBeats evaluator variant, ideal DCG from the retrieved list "
        "only (never lower than ndcg@k); not comparable with published NDCG.",
    ]
    short = [k for k in CUTOFFS if k > top_k]
    if short:
        notes.append(
            f"top_k={top_k}: metrics @{', @'.join(map(str, short))} see only {top_k} ids "
            "per query; ask for top_k=10 (--top-k 10) for a meaningful @10."
        )
    return notes


def build_report(
    outcomes: Sequence[QueryOutcome],
    qrels: Qrels,
    *,
    agent: str,
    protocol: str,
    top_k: int,
    seed: int,
    wall_s: float,
) -> EvalReport:
    """Compute the report of one run."""
    per: dict[str, dict[str, float]] = {}
    for o in outcomes:
        ranked, judged = o.doc_ids or [], qrels.get(o.query_id, {})
        scores = {f"ndcg@{k}": per_query(ranked, judged, "ndcg", k) for k in CUTOFFS}
        for k in CUTOFFS:
            scores[f"agentbeats_ndcg@{k}"] = ndcg_at_k_retrieved_ideal(ranked, judged, k)
            scores[f"precision@{k}"] = per_query(ranked, judged, "precision", k)
            scores[f"recall@{k}"] = per_query(ranked, judged, "recall", k)
        scores["mrr"] = per_query(ranked, judged, "mrr", None)
        per[o.query_id] = scores
    names = sorted({name for scores in per.values() for name in scores})
    metrics = {n: statistics.fmean(s[n] for s in per.values()) if per else 0.0 for n in names}
    failures = [
        Failure(query_id=o.query_id, reason=o.reason or "unknown", message=o.error or "")
        for o in outcomes
        if not o.ok
    ]
    answered = len(outcomes) - len(failures)
    return EvalReport(
        agent=agent,
        protocol=protocol,
        top_k=top_k,
        seed=seed,
        num_queries=len(outcomes),
        answered=answered,
        failed=len(failures),
        metrics=metrics,
        ndcg_spread={
            f"ndcg@{k}": spread([per[o.query_id][f"ndcg@{k}"] for o in outcomes]) for k in CUTOFFS
        },
        latency=latency_stats([o.latency_s for o in outcomes]),
        throughput_qps=len(outcomes) / wall_s if wall_s > 0 else 0.0,
        wall_s=wall_s,
        failures_by_reason=dict(Counter(f.reason for f in failures)),
        failures=failures,
        notes=_notes(top_k),
        queries=[
            QueryScore(
                query_id=o.query_id,
                latency_s=o.latency_s,
                doc_ids=o.doc_ids,
                ndcg={k: v for k, v in per[o.query_id].items() if k.startswith("ndcg@")},
            )
            for o in outcomes
        ],
    )
