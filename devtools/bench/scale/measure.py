"""One size in one mode: the ordinary indexer builds its store, the real MCP server serves it.

The indexer runs as ``python -m services.retrieval.indexing.index`` with the size's folder as its
data and its own store folder, exactly as a deployment runs it; its log says whether it read the
document vectors from its cache (it must: a distractor encoded here would mean the cache key
missed). The MCP server runs as the benchmarks run it (:data:`devtools.bench.a2a_agents.BENCH_ENV`:
result cache off, one process), and is measured from outside:

- start to ready: from launching the process to ``/readyz`` answering 200;
- RSS (``/proc``) after start and after every query of the run;
- CPU per query: the server's CPU seconds (``/proc``, every thread) over a phase, per query; the
  event loop's thread and the other threads (encoding and ranking) apart;
- per stage: the server's own histograms at ``/metrics`` (encode, store, ranking), their sums'
  increase over the one-in-flight phase per query; one at a time these stages are CPU-bound,
  so their time is about their CPU;
- p50 and p99 of ``POST /search_nfcorpus`` at 1 and at 4 in flight.

The one-in-flight phase asks the judged test queries (its answers are the quality run); the
four-in-flight phase asks dev and test texts round-robin until the run's query count is reached.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
from prometheus_client.parser import text_string_to_metric_families

from devtools.bench.a2a_agents import BENCH_ENV
from devtools.bench.mcp_cpu import thread_seconds
from harness.processes import BASE_ENV, REPO, ServerProcess
from services.green_agent.evaluation.report import percentile

log = logging.getLogger(__name__)

TOP_K = 10
#: Histograms of the MCP server that time one search's stages (services/mcp_server/metrics.py).
STAGES = {
    "encode": "mcp_encode_duration_seconds",
    "store": "mcp_store_query_duration_seconds",
    "ranking": "mcp_ranking_duration_seconds",
}
#: The histogram of each store call, by operation (the same module).
STORE_CALLS = "mcp_store_call_duration_seconds"
WARM_UP = 10
#: The indexer's log line for each chunk it encoded (rather than read from its checkpoint).
ENCODED = "encoded chunk"


@dataclass(frozen=True, slots=True)
class Target:
    """One store to build and serve: a size's folder in one mode."""

    documents: int
    mode: str
    data_dir: Path
    edge_path: Path
    cache_dir: Path
    logs: Path

    def env(self) -> dict[str, str]:
        """The settings the indexer and the server read (nothing else differs between sizes)."""
        return {
            "RETRIEVAL_DATA_DIR": str(self.data_dir),
            "RETRIEVAL_STORE": "embedded",
            "RETRIEVAL_EDGE_PATH": str(self.edge_path),
            "RETRIEVAL_CACHE_DIR": str(self.cache_dir),
            "RETRIEVAL_MODE": self.mode,
        }


def build_index(target: Target) -> dict[str, Any]:
    """Run the ordinary indexer; how long it took and whether it read the cached vectors."""
    target.logs.mkdir(parents=True, exist_ok=True)
    log_path = target.logs / f"index-{target.mode}.log"
    env = {**os.environ, **BASE_ENV, **target.env()}
    started = time.monotonic()
    with open(log_path, "wb") as out:
        run = subprocess.run(
            [sys.executable, "-m", "services.retrieval.indexing.index"],
            cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT, check=False,
        )  # fmt: skip
    seconds = time.monotonic() - started
    text = log_path.read_text(errors="replace")
    if run.returncode != 0:
        raise RuntimeError(f"indexer failed ({run.returncode}), see {log_path}:\n{text[-2000:]}")
    built = "already up to date" not in text
    return {
        "index_build_s": seconds,
        "index_built": built,
        # Every chunk's vectors are in its checkpoint: an encoded chunk would be a distractor
        # encoded for real (hours at the larger sizes) or a key the harness got wrong.
        "indexer_encoded_chunks": text.count(ENCODED),
    }


def disk_mb(folder: Path) -> float:
    """What the files under ``folder`` occupy on disk (allocated blocks, as ``du``), in MB."""
    total = sum(p.lstat().st_blocks * 512 for p in folder.rglob("*") if p.is_file())
    return total / 1e6


def served_mb(edge_path: Path, collection: str) -> float:
    """What the served version occupies: ``collection`` and its companions (``-knn``…).

    A re-run's store also keeps the version its rebuild replaced (for a rollback): not counted.
    """
    return sum(
        disk_mb(d)
        for d in edge_path.iterdir()
        if d.is_dir() and (d.name == collection or d.name.startswith(f"{collection}-"))
    )


def stage_sums(text: str) -> dict[str, tuple[float, float]]:
    """(sum, count) of each stage's histogram in a ``/metrics`` page."""
    wanted = {v: k for k, v in STAGES.items()}
    found: dict[str, tuple[float, float]] = {}
    for family in text_string_to_metric_families(text):
        stage = wanted.get(family.name)
        if stage is None:
            continue
        values = {s.name: s.value for s in family.samples}
        found[stage] = (
            values.get(family.name + "_sum", 0.0),
            values.get(family.name + "_count", 0.0),
        )
    return found


def store_call_sums(text: str) -> dict[str, tuple[float, float]]:
    """(sum, count) of the store calls' histogram by operation in a ``/metrics`` page."""
    found: dict[str, tuple[float, float]] = {}
    for family in text_string_to_metric_families(text):
        if family.name != STORE_CALLS:
            continue
        for sample in family.samples:
            operation = sample.labels.get("operation", "")
            total, count = found.get(operation, (0.0, 0.0))
            if sample.name == f"{STORE_CALLS}_sum":
                found[operation] = (sample.value, count)
            elif sample.name == f"{STORE_CALLS}_count":
                found[operation] = (total, sample.value)
    return found


def _scrape(server: ServerProcess) -> tuple[dict[str, tuple[float, float]], ...]:
    """The stages' and the store calls' sums and counts, as the server reports them now."""
    response = httpx.get(server.base_url + "/metrics", timeout=10.0)
    response.raise_for_status()
    return stage_sums(response.text), store_call_sums(response.text)


def _per(
    after: dict[str, tuple[float, float]],
    before: dict[str, tuple[float, float]],
    queries: int | None = None,
) -> dict[str, float]:
    """Milliseconds per observation of each histogram between two scrapes.

    Given ``queries``: per query of the phase between them instead.
    """
    out = {}
    for name, (total, count) in after.items():
        was_total, was_count = before.get(name, (0.0, 0.0))
        out[name] = (total - was_total) * 1000 / max(queries or count - was_count, 1.0)
    return out


async def _ask(texts: Sequence[str], base_url: str, in_flight: int) -> tuple[list[list[str]], list[float], int]:  # fmt: skip
    """Every text once, ``in_flight`` at a time: each answer's ids, latencies, failures."""
    answers: list[list[str]] = [[] for _ in texts]
    latencies: list[float] = []
    failed = 0
    todo = iter(enumerate(texts))
    limits = httpx.Limits(max_connections=in_flight, max_keepalive_connections=in_flight)

    async def worker(client: httpx.AsyncClient) -> None:
        nonlocal failed
        for i, text in todo:
            started = time.perf_counter()
            try:
                response = await client.post(
                    "/search_nfcorpus", json={"query": text, "top_k": TOP_K}
                )
                response.raise_for_status()
            except httpx.HTTPError as e:
                failed += 1
                log.warning("query %d failed: %s", i, e)
                continue
            latencies.append(time.perf_counter() - started)
            answers[i] = [hit["doc_id"] for hit in response.json()["results"]]

    async with httpx.AsyncClient(base_url=base_url, timeout=120.0, limits=limits) as client:
        await asyncio.gather(*(worker(client) for _ in range(in_flight)))
    return answers, latencies, failed


def _phase(server: ServerProcess, texts: Sequence[str], in_flight: int) -> dict[str, Any]:
    """Send ``texts`` at ``in_flight``; the answers, latency and the server's CPU per query."""
    pid = server.pid or 0
    cpu0, (loop0, others0) = server.cpu_seconds(), thread_seconds(pid)
    answers, latencies, failed = asyncio.run(_ask(texts, server.base_url, in_flight))
    cpu1, (loop1, others1) = server.cpu_seconds(), thread_seconds(pid)
    n = max(len(texts), 1)
    return {
        "answers": answers,
        "queries": len(texts),
        "failed": failed,
        "cpu_ms_per_query": (cpu1 - cpu0) * 1000 / n,
        "cpu_ms_event_loop": (loop1 - loop0) * 1000 / n,
        "cpu_ms_other_threads": (others1 - others0) * 1000 / n,
        "p50_ms": percentile(latencies, 50) * 1000,
        "p99_ms": percentile(latencies, 99) * 1000,
    }


def serve_and_measure(
    target: Target, quality_texts: Sequence[str], load_texts: Sequence[str], total: int
) -> tuple[dict[str, Any], list[list[str]]]:
    """Start the server over ``target``'s store and measure it; also the quality run's answers.

    ``quality_texts`` go one at a time; then ``load_texts`` round-robin, four at a time, until
    ``total`` queries were asked in all.
    """
    env = {**BENCH_ENV, **target.env()}
    server = ServerProcess.module(
        "services.mcp_server", env=env, log_path=target.logs / f"mcp-{target.mode}.log"
    )
    started = time.monotonic()
    server.start()
    try:
        ready_s = time.monotonic() - started
        memory_start = server.memory_kb()
        warm = [f"{t} (warm-up)" for t in itertools.islice(itertools.cycle(load_texts), WARM_UP)]
        _phase(server, warm, 1)  # first calls allocate; never a measured question
        before = _scrape(server)
        c1 = _phase(server, quality_texts, 1)
        after = _scrape(server)
        rest = max(total - len(quality_texts), 0)
        c4 = _phase(server, list(itertools.islice(itertools.cycle(load_texts), rest)), 4)
        memory_after = server.memory_kb()
    finally:
        server.stop()
    (stages_before, calls_before), (stages_after, calls_after) = before, after
    queries = max(len(quality_texts), 1)
    calls = {
        op: (count - calls_before.get(op, (0.0, 0.0))[1]) / queries
        for op, (_, count) in calls_after.items()
    }
    figures = {
        "ready_s": ready_s,
        "rss_mb_after_start": memory_start["VmRSS"] / 1024,
        "rss_mb_after_queries": memory_after["VmRSS"] / 1024,
        # What the worker owns, apart from the index's mapped pages (the shared page cache).
        "rss_anon_mb_after_start": memory_start["RssAnon"] / 1024,
        "rss_anon_mb_after_queries": memory_after["RssAnon"] / 1024,
        "queries": len(quality_texts) + rest,
        "failed": c1["failed"] + c4["failed"],
        "cpu_ms_per_query": c1["cpu_ms_per_query"],
        "cpu_ms_event_loop": c1["cpu_ms_event_loop"],
        "cpu_ms_other_threads": c1["cpu_ms_other_threads"],
        "cpu_ms_per_query_c4": c4["cpu_ms_per_query"],
        "stage_ms": _per(stages_after, stages_before),
        # The store's time by operation, per query of the same phase, and its calls per query.
        "store_call_ms": _per(calls_after, calls_before, queries),
        "store_calls_per_query": {op: n for op, n in calls.items() if n},
        "p50_ms_c1": c1["p50_ms"],
        "p99_ms_c1": c1["p99_ms"],
        "p50_ms_c4": c4["p50_ms"],
        "p99_ms_c4": c4["p99_ms"],
    }
    return figures, c1["answers"]
