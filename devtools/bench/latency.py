"""Latency benchmarks: query encode, store query, REST and MCP round trips (p50/p99), the A2A path.

``python -m devtools.bench.latency --out reports/bench`` writes ``bench.json`` and ``bench.md``. All numbers
of one file come from one run on one machine; compare medians and ratios, not absolutes across
machines. Runs against the index ``make index`` built (the configured store). The A2A path runs
through our purple agent and through a minimal one side by side (:mod:`.a2a_agents`); every server
runs with the MCP result cache off but for one separately reported phase. The digest of the
pipeline's rankings of every test query (``rankings.py``) proves a run ranked as before.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import time
from collections.abc import Callable
from pathlib import Path
from statistics import median, quantiles

import httpx
from mcp import Client

from devtools.bench.a2a_agents import BENCH_ENV, measure_a2a
from devtools.bench.a2a_report import a2a_tables, ratios
from devtools.eval.rankings import DEPTH, digest, test_rankings
from harness.processes import ServerProcess
from services.nfcorpus.dataset import load_qrels, load_queries
from services.retrieval.encoders.dense import OnnxMiniLM
from services.retrieval.query.pipeline import RankingPipeline
from services.retrieval.settings import RetrievalSettings
from services.retrieval.store import open_store


def summarize(samples: list[float]) -> dict[str, float]:
    """p50/p99/mean in milliseconds."""
    cuts = quantiles(samples, n=100)
    return {
        "n": len(samples),
        "p50_ms": median(samples) * 1000,
        "p99_ms": cuts[98] * 1000,
        "mean_ms": sum(samples) / len(samples) * 1000,
    }


def timed(fn: Callable[[], object], repeat: int) -> list[float]:
    out = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        out.append(time.perf_counter() - started)
    return out


def in_process(
    texts: list[str], settings: RetrievalSettings, tag: str
) -> dict[str, dict[str, float]]:
    store = open_store(settings.store.model_copy(update={"edge_private_copy": True}))
    try:
        searcher = RankingPipeline(store, OnnxMiniLM(threads=1), settings)
        for t in texts[:20]:  # warm-up
            searcher.search(t, 10)
        encode, query = [], []
        for t in texts:
            started = time.perf_counter()
            encoded = searcher.encode(t)
            mid = time.perf_counter()
            searcher.rank(encoded, 10)
            query.append(time.perf_counter() - mid)
            encode.append(mid - started)
        return {"query_encode": summarize(encode), f"{tag}_retrieve_and_rank": summarize(query)}
    finally:
        store.close()


async def _mcp_calls(url: str, texts: list[str]) -> list[float]:
    out = []
    async with Client(url) as client:
        for t in texts[:20]:
            await client.call_tool("search_nfcorpus", {"query": t, "top_k": 10})
        for t in texts:
            started = time.perf_counter()
            await client.call_tool("search_nfcorpus", {"query": t, "top_k": 10})
            out.append(time.perf_counter() - started)
    return out


def over_the_wire(texts: list[str], mode: str) -> dict[str, dict[str, float]]:
    server = ServerProcess.module("services.mcp_server", env={**BENCH_ENV, "RETRIEVAL_MODE": mode})
    base = server.base_url
    server.start()
    try:
        with httpx.Client(base_url=base) as client:
            for t in texts[:20]:
                client.post("/search_nfcorpus", json={"query": t, "top_k": 10})
            rest = []
            for t in texts:
                started = time.perf_counter()
                client.post("/search_nfcorpus", json={"query": t, "top_k": 10}).raise_for_status()
                rest.append(time.perf_counter() - started)
        mcp = asyncio.run(_mcp_calls(f"{base}/mcp", texts))
        return {
            f"{mode}_rest_round_trip": summarize(rest),
            f"{mode}_mcp_tool_round_trip": summarize(mcp),
        }
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description="latency benchmarks")
    parser.add_argument("--out", type=Path, default=Path("reports/bench"))
    parser.add_argument("--queries", type=int, default=324, help="dev queries to time")
    args = parser.parse_args()
    began = time.perf_counter()
    settings = RetrievalSettings()
    queries = load_queries(settings.data_dir)
    texts = [queries[q] for q in sorted(load_qrels(settings.data_dir, "dev"))][: args.queries]
    zero_shot = settings.model_copy(update={"mode": "zero-shot"})
    results = {
        **in_process(texts, zero_shot, "zero-shot"),
        **in_process(texts, settings, "full"),
        **over_the_wire(texts, "zero-shot"),
        **over_the_wire(texts, "full"),
    }
    ranked = test_rankings(settings)  # "rankings unchanged", proved by every bench run
    rankings = {"queries": len(ranked), "depth": DEPTH, "sha256": digest(ranked)}
    a2a = measure_a2a(texts, settings.data_dir)
    a2a["ratios_ours_over_minimal"] = ratios(a2a)
    results["full_minus_zero_shot_p50_ms"] = {
        "rest_round_trip": results["full_rest_round_trip"]["p50_ms"]
        - results["zero-shot_rest_round_trip"]["p50_ms"],
        "retrieve_and_rank": results["full_retrieve_and_rank"]["p50_ms"]
        - results["zero-shot_retrieve_and_rank"]["p50_ms"],
    }
    meta = {
        "machine": f"{platform.machine()} {os.cpu_count()} cpus, {platform.python_version()}",
        "store": settings.store.backend,
        "fusion": settings.hybrid.fusion,
        "feedback_docs": settings.feedback.docs,
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "wall_s": round(time.perf_counter() - began, 1),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.with_suffix(".json").write_text(
        json.dumps({"meta": meta, "rankings": rankings, "results": results, "a2a": a2a}, indent=2)
        + "\n"
    )
    lines = [
        f"# Latency benchmark ({meta['date']}, {meta['machine']}, store={meta['store']})",
        "",
        f"Rankings digest (top {DEPTH} of the {rankings['queries']} test queries, in-process "
        f"pipeline, as `make rankings`): `{rankings['sha256']}`. Run took {meta['wall_s']:.0f} s.",
        "",
        "| stage | n | p50 ms | p99 ms | mean ms |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    lines += [
        f"| {name} | {r['n']:.0f} | {r['p50_ms']:.2f} | {r['p99_ms']:.2f} | {r['mean_ms']:.2f} |"
        for name, r in results.items()
        if "n" in r
    ]
    cost = results["full_minus_zero_shot_p50_ms"]
    lines += [
        "",
        f"Full pipeline minus plain hybrid (zero-shot), p50: {cost['retrieve_and_rank']:.2f} ms "
        f"in-process, {cost['rest_round_trip']:.2f} ms over REST.",
    ]
    lines += ["", *a2a_tables(results, a2a)]
    args.out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
