"""Quality of the MCP server's ranking, measured straight through ``POST /search_nfcorpus``.

``python -m services.green_agent rest --url http://127.0.0.1:8000 --splits dev,test`` asks for
the top 10 of every judged query of each split and reports the standard (trec_eval) NDCG@5,
NDCG@10, recall@10 and MRR@10, plus the client-side latency of each call. It skips the purple
agent: the ablation table and the retrieval experiments measure the search itself this way.
"""

from __future__ import annotations

import argparse
import asyncio
import time
from collections.abc import Sequence
from pathlib import Path
from statistics import median, quantiles
from typing import cast, get_args

import httpx

from services.nfcorpus.dataset import Split, load_qrels, load_queries
from services.nfcorpus.measures import mean_over_queries

DEPTH = 10


def splits_argument(text: str) -> list[Split]:
    """``--splits dev,test``: the named splits; an unknown one is refused by name."""
    splits = [s.strip() for s in text.split(",")]
    unknown = [s for s in splits if s not in get_args(Split)]
    if unknown:
        raise argparse.ArgumentTypeError(f"unknown split {unknown[0]!r}")
    return [cast(Split, s) for s in splits]


async def _run_split(
    client: httpx.AsyncClient,
    url: str,
    queries: dict[str, str],
    ids: Sequence[str],
    concurrency: int,
) -> tuple[dict[str, list[str]], list[float]]:
    gate = asyncio.Semaphore(concurrency)
    run: dict[str, list[str]] = {}
    latencies: list[float] = []

    async def one(query_id: str) -> None:
        async with gate:
            started = time.perf_counter()
            response = await client.post(
                f"{url}/search_nfcorpus", json={"query": queries[query_id], "top_k": DEPTH}
            )
            latencies.append(time.perf_counter() - started)
            response.raise_for_status()
            run[query_id] = [r["doc_id"] for r in response.json()["results"]]

    await asyncio.gather(*(one(q) for q in ids))
    return run, latencies


def _summary(
    run: dict[str, list[str]], qrels: dict[str, dict[str, int]], lat: list[float]
) -> dict[str, float]:
    cuts = quantiles(lat, n=100) if len(lat) > 1 else lat * 99
    return {
        "queries": len(qrels),
        "ndcg@5": mean_over_queries(run, qrels, "ndcg", 5),
        "ndcg@10": mean_over_queries(run, qrels, "ndcg", 10),
        "recall@10": mean_over_queries(run, qrels, "recall", 10),
        "mrr@10": mean_over_queries(run, qrels, "mrr", 10),
        "latency_p50_ms": median(lat) * 1000,
        "latency_p99_ms": cuts[98] * 1000,
    }


async def evaluate_rest(
    url: str, splits: Sequence[Split], data_dir: Path, concurrency: int = 1
) -> dict[str, dict[str, float]]:
    """Metrics per split for the MCP server at ``url``."""
    queries = load_queries(data_dir)
    report: dict[str, dict[str, float]] = {}
    async with httpx.AsyncClient(timeout=30.0) as client:
        for split in splits:
            qrels = load_qrels(data_dir, split)
            run, latencies = await _run_split(client, url, queries, sorted(qrels), concurrency)
            report[split] = _summary(run, qrels, latencies)
    return report


def table(report: dict[str, dict[str, float]]) -> str:
    """The metrics of each split as a plain-text table."""
    lines = [
        f"{'split':<6} {'queries':>7} {'NDCG@5':>7} {'NDCG@10':>8} {'R@10':>6} {'MRR@10':>7} "
        f"{'p50 ms':>7}"
    ]
    lines += [
        f"{split:<6} {m['queries']:>7.0f} {m['ndcg@5']:>7.4f} {m['ndcg@10']:>8.4f} "
        f"{m['recall@10']:>6.4f} {m['mrr@10']:>7.4f} {m['latency_p50_ms']:>7.2f}"
        for split, m in report.items()
    ]
    return "\n".join(lines)
