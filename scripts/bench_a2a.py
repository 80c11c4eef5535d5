"""The A2A request path in ``make bench``: latency, throughput and server CPU per answered query.

The MCP server and the purple agent run as child processes; this process is the green agent's
client (the load generator). CPU per answered query is each server's CPU time over a phase (read
from ``/proc``) divided by the queries it answered, so it counts everything the server does for
a query (protocol, validation, JSON, telemetry), not only the ranking.
"""

from __future__ import annotations

import asyncio
import time
from pathlib import Path
from typing import Any

from services.common.processes import ServerProcess
from services.green_agent.client import connect
from services.green_agent.dataset import load_test_set
from services.green_agent.evaluator import QueryOutcome, ask_and_check
from services.green_agent.load import run_load
from services.green_agent.report import latency_stats

SATURATION_CONCURRENCY = 16
SATURATION_S = 20.0
TOP_K = 10


def _cpu(servers: dict[str, ServerProcess]) -> dict[str, float]:
    return {name: server.cpu_seconds() for name, server in servers.items()}


def _figures(
    outcomes: list[QueryOutcome],
    wall_s: float,
    cpu_before: dict[str, float],
    cpu_after: dict[str, float],
) -> dict[str, Any]:
    """Latency, throughput and each server's CPU per answered query of one phase."""
    answered = [o for o in outcomes if o.ok]
    return {
        "latency": latency_stats([o.latency_s for o in answered]).model_dump(),
        "answered": len(answered),
        "failed": len(outcomes) - len(answered),
        "throughput_qps": len(answered) / wall_s,
        **{
            f"{name}_cpu_ms_per_query": (cpu_after[name] - cpu_before[name]) / len(answered) * 1000
            for name in cpu_before
        },
    }


async def _phases(
    url: str, texts: list[str], valid_ids: frozenset[str], servers: dict[str, ServerProcess]
) -> dict[str, Any]:
    client = await connect(url, "1.0", timeout_s=60.0, max_connections=SATURATION_CONCURRENCY)
    try:
        for text in texts[:20]:  # warm-up
            await ask_and_check(client, "warm", text, TOP_K, valid_ids, legacy=False)
        before = _cpu(servers)
        started = time.perf_counter()
        outcomes = [
            await ask_and_check(client, str(i), t, TOP_K, valid_ids, legacy=False)
            for i, t in enumerate(texts)
        ]
        one = _figures(outcomes, time.perf_counter() - started, before, _cpu(servers))
        before = _cpu(servers)
        queries = [(str(i), t) for i, t in enumerate(texts)]
        loaded, dropped, wall = await run_load(
            client,
            queries,
            valid_ids,
            top_k=TOP_K,
            duration_s=SATURATION_S,
            concurrency=SATURATION_CONCURRENCY,
        )
        saturated = _figures(loaded, wall, before, _cpu(servers))
        saturated["failed"] += dropped  # never sent: the load generator's cap
    finally:
        await client.aclose()
    return {"concurrency_1": one, f"concurrency_{SATURATION_CONCURRENCY}": saturated}


def measure_a2a(texts: list[str], data_dir: Path) -> dict[str, Any]:
    """Start the MCP server and the purple agent, then time and cost the A2A path."""
    valid_ids = load_test_set(data_dir).doc_ids
    mcp = ServerProcess.module("services.mcp_server")
    with mcp:
        purple = ServerProcess.module("services.purple_agent", ["--mcp-url", mcp.base_url + "/mcp"])
        with purple:
            servers = {"mcp": mcp, "purple": purple}
            rss_start = {f"{n}_rss_mb": s.rss_kb() / 1024 for n, s in servers.items()}
            phases = asyncio.run(_phases(purple.base_url, texts, valid_ids, servers))
            rss_end = {f"{n}_rss_mb": s.rss_kb() / 1024 for n, s in servers.items()}
    return {**phases, "rss_after_start": rss_start, "rss_after_load": rss_end}
