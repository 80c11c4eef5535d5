"""Quality of the MCP server's ranking, measured straight through ``POST /search_nfcorpus``.

``python -m services.retrieval.evaluate --url http://127.0.0.1:8000 --splits dev,test``
asks for the top 10 of every judged query of each split and reports the standard (trec_eval)
NDCG@5, NDCG@10, recall@10 and MRR@10, plus the client-side latency of each call.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time
from collections.abc import Sequence
from pathlib import Path
from statistics import median, quantiles

import httpx

from services.retrieval.corpus import Split, load_qrels, load_queries
from services.retrieval.metrics import mean_over_queries
from services.retrieval.settings import RetrievalSettings

DEPTH = 10


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


async def evaluate(
    url: str, splits: Sequence[Split], concurrency: int = 1
) -> dict[str, dict[str, float]]:
    """Metrics per split for the server at ``url``."""
    folder = RetrievalSettings().data_dir
    queries = load_queries(folder)
    report: dict[str, dict[str, float]] = {}
    async with httpx.AsyncClient(timeout=30.0) as client:
        for split in splits:
            qrels = load_qrels(folder, split)
            run, latencies = await _run_split(client, url, queries, sorted(qrels), concurrency)
            report[split] = _summary(run, qrels, latencies)
    return report


def main() -> None:
    """CLI entry point."""
    parser = argparse.ArgumentParser(description="NDCG of the MCP server over REST")
    parser.add_argument("--url", default="http://127.0.0.1:8000")
    parser.add_argument("--splits", default="dev,test")
    parser.add_argument("--concurrency", type=int, default=1)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    splits = [s.strip() for s in args.splits.split(",")]
    for s in splits:
        if s not in ("train", "dev", "test"):
            parser.error(f"unknown split {s!r}")
    report = asyncio.run(evaluate(args.url, splits, args.concurrency))
    print(
        f"{'split':<6} {'queries':>7} {'NDCG@5':>7} {'NDCG@10':>8} {'R@10':>6} {'MRR@10':>7} {'p50 ms':>7}"
    )
    for split, m in report.items():
        print(
            f"{split:<6} {m['queries']:>7.0f} {m['ndcg@5']:>7.4f} {m['ndcg@10']:>8.4f} "
            f"{m['recall@10']:>6.4f} {m['mrr@10']:>7.4f} {m['latency_p50_ms']:>7.2f}"
        )
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(json.dumps({"url": args.url, "splits": report}, indent=2) + "\n")
        print(f"written to {args.out}")


if __name__ == "__main__":
    main()
