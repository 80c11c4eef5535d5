"""The A2A request path in ``make bench``: latency, throughput and server CPU per answered query.

The MCP server and the agents run as child processes; this process is the green agent's client
(the load generator). CPU per answered query is each server's CPU time over a phase (read from
``/proc``) divided by the queries it answered, so it counts everything the server does for a
query (protocol, validation, JSON, telemetry), not only the ranking.

Two agents take turns against the same MCP server in one run: our purple agent and the minimal
one of ``devtools/bench/minimal_agent.py`` (the seed's design), so what ours costs over the least an
agent can do shows as a ratio. Every server runs with the MCP result cache off; one extra phase
repeats our agent's concurrency-1 pass against a second MCP server with the cache on, after one
warm pass (every query then hits).
"""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path
from typing import Any

from harness.processes import ServerProcess, free_port
from services.green_agent.evaluation.client import AgentClient, connect
from services.green_agent.evaluation.dataset import load_test_set
from services.green_agent.evaluation.evaluator import QueryOutcome, ask_and_check
from services.green_agent.evaluation.report import latency_stats
from services.green_agent.load.recorder import RunSetup
from services.green_agent.load.run import run_shape
from services.green_agent.load.shape import Shape
from services.mcp_server.settings import McpServerSettings
from services.retrieval.encoders.dense import OnnxMiniLM

SATURATION_CONCURRENCY = 16
SATURATION_S = 20.0
TOP_K = 10
#: Queries encoded before the encoder's CPU is measured (first calls allocate).
WARM_UP = 20
#: Entries of the MCP server's result cache in the cached phase (every bench text fits).
CACHED_ENTRIES = 4096
#: Every server the bench starts: result cache off (measure the work, not the cache), and a
#: private copy of the embedded shard (another server on this worktree may hold the original).
BENCH_ENV = {"MCP_RESULT_CACHE_ENTRIES": "0", "RETRIEVAL_EDGE_PRIVATE_COPY": "true"}


def mcp_server(
    cache_entries: int = 0, env: dict[str, str] | None = None, cwd: Path | None = None
) -> ServerProcess:
    """The MCP server with the bench's environment (and a result cache of ``cache_entries``).

    ``env`` adds to it; ``cwd`` runs another checkout's server (see ``devtools.bench.pair``).
    """
    cache = {"MCP_RESULT_CACHE_ENTRIES": str(cache_entries)}
    env = {**BENCH_ENV, **(env or {}), **cache}
    return ServerProcess.module("services.mcp_server", env=env, cwd=cwd)


def our_agent(
    mcp_url: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> ServerProcess:
    """Our purple agent in front of ``mcp_url`` (``env`` and ``cwd`` as :func:`mcp_server`)."""
    args = ["--mcp-url", mcp_url]
    return ServerProcess.module(
        "services.purple_agent", args, env={**BENCH_ENV, **(env or {})}, cwd=cwd
    )


def minimal_agent(mcp_url: str) -> ServerProcess:
    """The seed-style agent of ``devtools/bench/minimal_agent.py``; ready once its card answers."""
    port = free_port()
    url = f"http://127.0.0.1:{port}/"
    argv = [
        sys.executable,
        "-m",
        "devtools.bench.minimal_agent",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    argv += ["--card-url", url, "--mcp-url", mcp_url]
    return ServerProcess(argv, port, env=BENCH_ENV, ready_path="/.well-known/agent-card.json")


def _cpu(servers: dict[str, ServerProcess]) -> dict[str, float]:
    return {name: server.cpu_seconds() for name, server in servers.items()}


def _rss_mb(servers: dict[str, ServerProcess]) -> dict[str, float]:
    return {f"{name}_rss_mb": server.rss_kb() / 1024 for name, server in servers.items()}


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
            f"{name}_cpu_ms_per_query": (cpu_after[name] - cpu_before[name])
            / max(1, len(answered))
            * 1000
            for name in cpu_before
        },
    }


async def _one_at_a_time(
    client: AgentClient, texts: list[str], valid_ids: frozenset[str], servers: dict[str, Any]
) -> dict[str, Any]:
    """Every text in turn (concurrency 1)."""
    before = _cpu(servers)
    started = time.perf_counter()
    outcomes = [
        await ask_and_check(client, str(i), t, TOP_K, valid_ids, legacy=False)
        for i, t in enumerate(texts)
    ]
    return _figures(outcomes, time.perf_counter() - started, before, _cpu(servers))


async def _saturated(
    client: AgentClient, texts: list[str], valid_ids: frozenset[str], servers: dict[str, Any]
) -> dict[str, Any]:
    """Closed loop at :data:`SATURATION_CONCURRENCY` for :data:`SATURATION_S`."""
    before = _cpu(servers)
    # Every outcome kept: this phase's percentiles are exact, not a report's 1% histogram.
    loaded: list[QueryOutcome] = []
    shape = Shape.constant("closed", SATURATION_CONCURRENCY, SATURATION_S)
    run = await run_shape(
        client,
        [(str(i), t) for i, t in enumerate(texts)],
        valid_ids,
        RunSetup(agent="bench", protocol="1.0", shape=shape),
        top_k=TOP_K,
        on_outcome=lambda outcome, _: loaded.append(outcome),
    )
    return _figures(loaded, run.finished_s, before, _cpu(servers))


async def _phases(
    url: str, texts: list[str], valid_ids: frozenset[str], servers: dict[str, ServerProcess]
) -> dict[str, Any]:
    client = await connect(url, "1.0", timeout_s=60.0, max_connections=SATURATION_CONCURRENCY)
    try:
        for text in texts[:20]:  # warm-up
            await ask_and_check(client, "warm", text, TOP_K, valid_ids, legacy=False)
        one = await _one_at_a_time(client, texts, valid_ids, servers)
        saturated = await _saturated(client, texts, valid_ids, servers)
    finally:
        await client.aclose()
    return {"concurrency_1": one, f"concurrency_{SATURATION_CONCURRENCY}": saturated}


async def _warm_then_again(
    url: str, texts: list[str], valid_ids: frozenset[str], servers: dict[str, ServerProcess]
) -> dict[str, Any]:
    client = await connect(url, "1.0", timeout_s=60.0, max_connections=1)
    try:
        first = await _one_at_a_time(client, texts, valid_ids, servers)
        second = await _one_at_a_time(client, texts, valid_ids, servers)
    finally:
        await client.aclose()
    return {"first_pass": first, "second_pass": second}


def measure_agent(
    mcp: ServerProcess, agent: ServerProcess, texts: list[str], valid_ids: frozenset[str]
) -> dict[str, Any]:
    """An agent's phases against its MCP server: concurrency 1, then 16; CPU and memory."""
    servers = {"mcp": mcp, "agent": agent}
    start = _rss_mb(servers)
    phases = asyncio.run(_phases(agent.base_url, texts, valid_ids, servers))
    return {**phases, "rss_after_start": start, "rss_after_load": _rss_mb(servers)}


def result_cache_known() -> bool:
    """Whether the MCP server's settings read ``MCP_RESULT_CACHE_ENTRIES`` (else it is ignored)."""
    return "result_cache_entries" in McpServerSettings.model_fields


def measure_cached(texts: list[str], valid_ids: frozenset[str]) -> dict[str, Any]:
    """Our agent's concurrency-1 pass twice against an MCP server with the result cache on."""
    with mcp_server(CACHED_ENTRIES) as mcp, our_agent(mcp.base_url + "/mcp") as agent:
        servers = {"mcp": mcp, "agent": agent}
        passes = asyncio.run(_warm_then_again(agent.base_url, texts, valid_ids, servers))
        return {
            "mcp_result_cache_entries": CACHED_ENTRIES,
            "cache_setting_known": result_cache_known(),
            **passes,
            **_rss_mb(servers),
        }


def encoder_cpu_ms(texts: list[str]) -> float:
    """CPU ms of encoding one query alone with the served model (one thread), in this process.

    The unit the servers' CPU per query is stated in, measured in the same run.
    """
    encoder = OnnxMiniLM(threads=1)
    for text in texts[:WARM_UP]:
        encoder.encode([text])
    started = time.process_time()
    for text in texts:
        encoder.encode([text])
    return (time.process_time() - started) * 1000 / len(texts)


def measure_a2a(texts: list[str], data_dir: Path) -> dict[str, Any]:
    """Start the MCP server and both agents, then time and cost the A2A path of each."""
    valid_ids = load_test_set(data_dir).doc_ids
    encode_ms = encoder_cpu_ms(texts)
    with mcp_server() as mcp:
        url = mcp.base_url + "/mcp"
        with our_agent(url) as ours, minimal_agent(url) as minimal:
            agents = {
                "ours": measure_agent(mcp, ours, texts, valid_ids),
                "minimal": measure_agent(mcp, minimal, texts, valid_ids),
            }
    return {
        **agents,
        "cached": measure_cached(texts, valid_ids),
        "encoder_cpu_ms_per_query": encode_ms,
    }
