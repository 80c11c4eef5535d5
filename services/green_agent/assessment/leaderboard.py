"""The leaderboard keys of an assessment's result, as the public NFCorpus evaluator computes them.

AgentBeats leaderboards written for the public NFCorpus evaluator read eight keys of its
result's data part: ``mean_ndcg_at_k``, ``mean_mrr_at_k``, ``mean_precision_at_k``,
``mean_recall_at_k`` (each rounded to 2 places), ``execution_time_seconds``, ``total_queries``,
``successful_communications`` and ``vector_search_calls_total``. Our result carries them beside
our full report, with the values that evaluator computes, so it can stand in for it:

- it reads a reply as a 0.3 client does (status text and every artifact part joined, then
  ``json.loads``) and scores whatever ``doc_ids`` that yields, ``[]`` when nothing parses;
- at cutoff ``k`` = the request's ``top_k``: NDCG with the ideal taken from the retrieved list
  (:func:`~services.nfcorpus.measures.ndcg_at_k_retrieved_ideal`), reciprocal rank of the first
  relevant id, precision as the relevant share of the ids returned (not of ``k``), recall as the
  share of the relevant documents found; a query that got no reply at all scores 0;
- a communication is successful when a reply arrived, whatever it held;
- ``vector_search_calls_total`` is the difference of the MCP server's ``qdrant_calls_total``
  (``POST /health_check``) before and after the run, 0 when no server was named or it did not say.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence

from services.green_agent.evaluation.evaluator import QueryOutcome
from services.nfcorpus.dataset import Qrels
from services.nfcorpus.measures import ndcg_at_k_retrieved_ideal


def _relevant(judged: dict[str, int]) -> set[str]:
    return {d for d, grade in judged.items() if grade > 0}


def query_figures(ranked: Sequence[str], judged: dict[str, int], k: int) -> dict[str, float]:
    """NDCG, MRR, precision and recall at ``k`` of one answer, as that evaluator defines them."""
    top, relevant = list(ranked[:k]), _relevant(judged)
    found = len(set(top) & relevant)
    first = next((rank for rank, d in enumerate(top, 1) if d in relevant), None)
    return {
        "ndcg": ndcg_at_k_retrieved_ideal(top, judged, k) if judged else 0.0,
        "mrr": 1.0 / first if first is not None and judged else 0.0,
        "precision": found / len(top) if top else 0.0,
        "recall": found / len(relevant) if relevant else 0.0,
    }


def leaderboard_keys(
    outcomes: Sequence[QueryOutcome],
    qrels: Qrels,
    top_k: int,
    wall_s: float,
    vector_search_calls: int | None,
) -> dict[str, float | int]:
    """The eight keys of the public evaluator's result, from our outcomes of one run."""
    per = [query_figures(o.loose_doc_ids or [], qrels.get(o.query_id, {}), top_k) for o in outcomes]

    def mean(name: str) -> float:
        return round(statistics.fmean(f[name] for f in per), 2) if per else 0.0

    return {
        "mean_ndcg_at_k": mean("ndcg"),
        "mean_mrr_at_k": mean("mrr"),
        "mean_precision_at_k": mean("precision"),
        "mean_recall_at_k": mean("recall"),
        "execution_time_seconds": round(wall_s, 2),
        "total_queries": len(outcomes),
        "successful_communications": sum(o.loose_doc_ids is not None for o in outcomes),
        "vector_search_calls_total": vector_search_calls or 0,
    }
