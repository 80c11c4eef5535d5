"""Resident memory of the served processes: after start and after N answered A2A queries.

``python -m devtools.bench.memory --queries 10000`` starts the MCP server and the purple agent as in
``make bench`` (result cache off, a private copy of the embedded shard), reads each process's
``/proc/<pid>/status`` (RSS, of which anonymous and file-backed) once both are ready, sends the
NFCorpus test queries round-robin through the purple agent at ``--concurrency``, and reads them
again. ``--gunicorn 2`` also measures an MCP pod of that many gunicorn workers: the total PSS of
master and workers (``/proc/<pid>/smaps_rollup``) after start and after the queries. Writes
``--out`` as JSON and prints a table; docs/performance.md keeps the figures of each change.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import sys
import tempfile
from pathlib import Path
from typing import Any

import httpx

from devtools.bench.a2a_agents import BENCH_ENV, TOP_K, mcp_server, our_agent
from harness.processes import REPO, ServerProcess, free_port
from services.green_agent.evaluation.client import connect
from services.green_agent.evaluation.dataset import load_test_set
from services.green_agent.evaluation.evaluator import ask_and_check
from services.retrieval.settings import RetrievalSettings


def status_mb(pid: int) -> dict[str, float]:
    """VmRSS, RssAnon and RssFile of one process, in MB."""
    fields = dict(
        line.split(":", 1) for line in Path(f"/proc/{pid}/status").read_text().splitlines()
    )
    return {k: int(fields[k].split()[0]) / 1024 for k in ("VmRSS", "RssAnon", "RssFile")}


def pss_mb(pids: list[int]) -> float:
    """Total proportional set size of ``pids``, in MB."""
    total = 0
    for pid in pids:
        for line in Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines():
            if line.startswith("Pss:"):
                total += int(line.split()[1])
    return total / 1024


def private_share(pid: int) -> float:
    """The part of ``pid``'s resident memory that no other process shares."""
    lines = Path(f"/proc/{pid}/smaps_rollup").read_text().splitlines()[1:]
    kb = {name.rstrip(":"): int(value) for name, value, *_ in map(str.split, lines)}
    return (kb["Private_Clean"] + kb["Private_Dirty"]) / kb["Rss"]


def children(pid: int) -> list[int]:
    """Direct children of ``pid`` (gunicorn's workers)."""
    text = Path(f"/proc/{pid}/task/{pid}/children").read_text()
    return [int(p) for p in text.split()]


async def _ask_all(url: str, texts: list[str], valid: frozenset[str], n: int, conc: int) -> int:
    """Send ``n`` queries, ``conc`` at a time; the number that failed."""
    client = await connect(url, "1.0", timeout_s=60.0, max_connections=conc)
    todo = itertools.islice(itertools.cycle(enumerate(texts)), n)
    failed = 0

    async def worker() -> None:
        nonlocal failed
        for i, text in todo:
            outcome = await ask_and_check(client, str(i), text, TOP_K, valid, legacy=False)
            failed += not outcome.ok

    try:
        await asyncio.gather(*(worker() for _ in range(conc)))
    finally:
        await client.aclose()
    return failed


def _rest_load(url: str, texts: list[str], n: int) -> None:
    """``n`` REST searches on fresh connections (so every gunicorn worker gets some)."""
    for text in itertools.islice(itertools.cycle(texts), n):
        httpx.post(f"{url}/search_nfcorpus", json={"query": text, "top_k": 20}).raise_for_status()


def measure_stack(texts: list[str], valid: frozenset[str], n: int, conc: int) -> dict[str, Any]:
    """MCP server + purple agent: RSS after start and after ``n`` A2A queries."""
    with mcp_server() as mcp, our_agent(mcp.base_url + "/mcp") as agent:
        procs = {"mcp": mcp, "purple": agent}
        start = {name: status_mb(p.pid or 0) for name, p in procs.items()}
        failed = asyncio.run(_ask_all(agent.base_url, texts, valid, n, conc))
        after = {name: status_mb(p.pid or 0) for name, p in procs.items()}
    return {"queries": n, "failed": failed, "after_start": start, "after_queries": after}


def measure_gunicorn(workers: int, texts: list[str], n: int) -> dict[str, Any]:
    """Total PSS of a gunicorn MCP pod after start and after ``n`` REST searches."""
    port = free_port()
    with tempfile.TemporaryDirectory() as scratch:
        env = {**BENCH_ENV, "PROMETHEUS_MULTIPROC_DIR": scratch, "TMPDIR": scratch}
        cmd = [
            sys.executable, "-m", "gunicorn", "--config", str(REPO / "services/gunicorn.conf.py"),
            "--workers", str(workers), "--bind", f"127.0.0.1:{port}", "services.mcp_server.asgi:app",
        ]  # fmt: skip
        with ServerProcess(cmd, port, env=env, log_path=Path(scratch) / "log") as pod:
            master = pod.pid or 0
            _rest_load(pod.base_url, texts, 4 * workers)  # every worker builds its app
            start = pss_mb([master, *children(master)])
            # Preloading makes most of a worker's pages shared with the master (~0.25 private
            # here; ~0.75 when each worker loads everything itself).
            private = [private_share(pid) for pid in children(master)]
            _rest_load(pod.base_url, texts, n)
            return {"workers": workers, "pss_after_start": start, "pss_after_queries": pss_mb(
                [master, *children(master)]
            ), "worker_private_share_after_start": private}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=10_000)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--gunicorn", type=int, default=0, help="also measure N gunicorn workers")
    parser.add_argument("--out", type=Path, default=Path("reports/memory.json"))
    args = parser.parse_args()
    test_set = load_test_set(RetrievalSettings().data_dir)
    texts = list(test_set.queries.values())
    result = measure_stack(texts, test_set.doc_ids, args.queries, args.concurrency)
    if args.gunicorn:
        result["gunicorn"] = measure_gunicorn(args.gunicorn, texts, min(args.queries, 2000))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    print(f"| MB | after start | after {args.queries} queries ({result['failed']} failed) |")
    print("| --- | --- | --- |")
    for name in ("mcp", "purple"):
        s, a = result["after_start"][name], result["after_queries"][name]
        print(
            f"| {name} RSS (anon + file) | {s['VmRSS']:.0f} ({s['RssAnon']:.0f} + "
            f"{s['RssFile']:.0f}) | {a['VmRSS']:.0f} ({a['RssAnon']:.0f} + {a['RssFile']:.0f}) |"
        )
    if args.gunicorn:
        g = result["gunicorn"]
        print(
            f"| gunicorn {g['workers']} workers, total PSS | {g['pss_after_start']:.0f} | "
            f"{g['pss_after_queries']:.0f} |"
        )
        shares = ", ".join(f"{x:.2f}" for x in g["worker_private_share_after_start"])
        print(f"\nworkers' private share of their resident memory after start: {shares}")


if __name__ == "__main__":
    main()
