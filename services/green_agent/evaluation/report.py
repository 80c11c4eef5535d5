"""Evaluation report: ranking metrics, their spread, latency, throughput and every failure.

The report is JSON for machines (``eval --out``, the A2A result's data part), rich tables for the
terminal and a few lines of text for the A2A result. Its latency figures are shared with the load
report (:mod:`services.green_agent.load.report`).

Ranking metrics use the standard trec_eval definitions from :mod:`services.nfcorpus.measures`
and are means over *every sampled query*: a query without a valid reply scores 0, as a missing
run does in trec_eval. ``agentbeats_ndcg@k`` is the public (AgentBeats) evaluator's variant,
whose ideal DCG comes from the retrieved list only; it is reported apart because it is never
lower.
"""

from __future__ import annotations

import math
import statistics
from collections import Counter
from collections.abc import Sequence

from pydantic import BaseModel
from rich.console import Group
from rich.table import Table

from services.green_agent.evaluation.evaluator import QueryOutcome
from services.nfcorpus.dataset import Qrels
from services.nfcorpus.measures import ndcg_at_k_retrieved_ideal, per_query

CUTOFFS = (5, 10)
_HEADLINE = ("ndcg@5", "ndcg@10", "mrr", "precision@5", "recall@5", "precision@10", "recall@10")


class LatencyStats(BaseModel):
    """Latency percentiles and extremes in seconds (0 when there is no latency).

    An evaluation interpolates its percentiles linearly between ranks (:func:`latency_stats`); a
    load run reads them from its histogram
    (:func:`~services.green_agent.load.timeline.histogram_stats`).
    """

    count: int
    mean_s: float
    min_s: float
    p50_s: float
    p90_s: float
    p95_s: float
    p99_s: float
    p999_s: float
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
    #: Each metric summed over the queries: shards of one run merge exactly by adding these and
    #: ``num_queries`` (a mean of the shards' means would weigh a small shard like a big one).
    sums: dict[str, float]
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
        min_s=min(values, default=0.0),
        p50_s=percentile(values, 50),
        p90_s=percentile(values, 90),
        p95_s=percentile(values, 95),
        p99_s=percentile(values, 99),
        p999_s=percentile(values, 99.9),
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
    sums = {n: math.fsum(s[n] for s in per.values()) for n in names}
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
        sums=sums,
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


#: The columns of a latency table, in order (:func:`latency_columns`).
LATENCY_COLUMNS = ("min", "p50", "p90", "p95", "p99", "p99.9", "max")


def latency_columns(stats: LatencyStats) -> tuple[float, ...]:
    """The figures of :data:`LATENCY_COLUMNS`, in seconds."""
    return (
        stats.min_s,
        stats.p50_s,
        stats.p90_s,
        stats.p95_s,
        stats.p99_s,
        stats.p999_s,
        stats.max_s,
    )


def milliseconds(seconds: float) -> str:
    """``seconds`` in milliseconds, with one decimal and the unit ``ms``."""
    return f"{seconds * 1000:.1f} ms"


def eval_tables(report: EvalReport) -> Group:
    """Metrics, latency and failures of an evaluation run as rich tables."""
    title = (
        f"{report.agent} (A2A {report.protocol}): {report.answered}/{report.num_queries} "
        f"queries answered, top_k={report.top_k}, seed={report.seed}"
    )
    metrics = Table(title=title)
    for column in ("metric", "mean", "median", "std", "min", "max"):
        metrics.add_column(column, justify="left" if column == "metric" else "right")
    for name in _HEADLINE:
        row = [name, f"{report.metrics.get(name, 0.0):.4f}"]
        spread = report.ndcg_spread.get(name)
        cells = [spread.median, spread.std, spread.min, spread.max] if spread else []
        metrics.add_row(*row, *(f"{v:.4f}" for v in cells))
    for k in (5, 10):
        name = f"agentbeats_ndcg@{k}"
        metrics.add_row(f"{name} (retrieved ideal)", f"{report.metrics.get(name, 0.0):.4f}")
    timing = Table(title="latency and throughput")
    for column in (*LATENCY_COLUMNS, "throughput", "wall"):
        timing.add_column(column, justify="right")
    lat = report.latency
    timing.add_row(
        *(milliseconds(s) for s in latency_columns(lat)),
        f"{report.throughput_qps:.1f} q/s",
        f"{report.wall_s:.1f} s",
    )
    parts: list[Table] = [metrics, timing]
    if report.failures:
        failures = Table(title=f"{report.failed} failures")
        for column in ("query", "reason", "message"):
            failures.add_column(column)
        for f in report.failures[:20]:
            failures.add_row(f.query_id, f.reason, f.message[:120])
        parts.append(failures)
    return Group(*parts)


def eval_summary(report: EvalReport) -> str:
    """Summarise an evaluation run in a few lines (the text part of the A2A results)."""
    m, lat = report.metrics, report.latency
    lines = [
        f"Evaluated {report.agent} on {report.num_queries} NFCorpus test queries "
        f"(top_k={report.top_k}, seed={report.seed}): {report.answered} answered, "
        f"{report.failed} failed.",
        f"NDCG@5 {m.get('ndcg@5', 0.0):.4f}, NDCG@10 {m.get('ndcg@10', 0.0):.4f}, "
        f"MRR {m.get('mrr', 0.0):.4f} (trec_eval definitions; AgentBeats retrieved-ideal "
        f"NDCG@5 {m.get('agentbeats_ndcg@5', 0.0):.4f}).",
        f"Latency p50 {milliseconds(lat.p50_s)}, p95 {milliseconds(lat.p95_s)}, "
        f"p99 {milliseconds(lat.p99_s)}; {report.throughput_qps:.1f} queries/s.",
    ]
    if report.failures_by_reason:
        reasons = ", ".join(f"{r}: {n}" for r, n in sorted(report.failures_by_reason.items()))
        lines.append(f"Failures by reason: {reasons}.")
    lines.extend(report.notes[2:])
    return "\n".join(lines)
