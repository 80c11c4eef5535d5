"""CPU of the purple agent per answered query at concurrency 1 and 16, and where it goes.

``PYTHONPATH=. python -m devtools.bench.profile_purple [--queries N] [--protocol 0.3] [--profile DIR]``

Starts the MCP server and the purple agent on the built index (as ``make bench`` does), warms up,
then sends ``N`` dev queries one at a time and the same ``N`` from 16 workers. The figure is the
purple process's CPU seconds over each phase (from ``/proc``) divided by the queries it answered.
``--protocol 0.3`` speaks as an a2a-sdk 0.3 green agent does (the card fetched before every
query). With ``--profile`` the agent runs under cProfile (CPU clock) and leaves one profile per
phase in ``DIR`` (``c1.prof``, ``c16.prof``; read them with ``pstats``); its CPU figures then
include the profiler's own cost, several times the agent's, so compare them only with each other.

On a shared machine CPU per query still moves with the load (cache misses, wake-ups): compare two
versions by alternating runs under the same load, not against a figure measured another day.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import cProfile
import json
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from harness.processes import ServerProcess, free_port

if TYPE_CHECKING:
    from services.green_agent.evaluation.client import A2AVersion, AgentClient

# The green agent's modules (the load generator's) are imported where they are used: imported
# here, they would import a2a before the profiled agent's package could switch off the SDK's own
# spans (services/purple_agent/__init__.py), and the profile would show spans the agent never makes.

TOP_K = 10
CONCURRENCY = 16
WARM_UP = 20
SERVE_PROFILED = "--serve-profiled"


async def _phase(
    client: AgentClient, texts: list[str], valid: frozenset[str], concurrency: int, legacy: bool
) -> int:
    """Send every text with ``concurrency`` workers; the number answered."""
    from services.green_agent.evaluation.evaluator import ask_and_check

    pending = list(enumerate(texts))
    answered = 0

    async def worker() -> None:
        nonlocal answered
        while pending:
            i, text = pending.pop()
            outcome = await ask_and_check(client, str(i), text, TOP_K, valid, legacy=legacy)
            answered += outcome.ok

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return answered


async def _measure(
    purple: ServerProcess,
    texts: list[str],
    valid: frozenset[str],
    protocol: A2AVersion,
    profiled: bool,
) -> dict[str, Any]:
    from services.green_agent.evaluation.client import connect

    legacy = protocol == "0.3"
    client = await connect(purple.base_url, protocol, timeout_s=60.0, max_connections=CONCURRENCY)
    figures: dict[str, Any] = {"protocol": protocol}
    try:
        await _phase(client, texts[:WARM_UP], valid, 1, legacy)
        for concurrency in (1, CONCURRENCY):
            if profiled:
                purple.signal(signal.SIGUSR1)
            before = purple.cpu_seconds()
            answered = await _phase(client, texts, valid, concurrency, legacy)
            cpu_ms = (purple.cpu_seconds() - before) / max(answered, 1) * 1000
            if profiled:
                purple.signal(signal.SIGUSR2)
                await asyncio.sleep(1.0)  # the profile is written
            figures[f"c{concurrency}"] = {
                "answered": answered,
                "purple_cpu_ms_per_query": round(cpu_ms, 2),
            }
    finally:
        await client.aclose()
    return figures


def _serve_profiled(out: Path, argv: list[str]) -> None:
    """The purple agent under cProfile: SIGUSR1 starts a phase, SIGUSR2 writes it."""
    from services.purple_agent.__main__ import main

    profile = cProfile.Profile(time.process_time)
    phases = iter(f"c{c}" for c in (1, CONCURRENCY))

    def start(*_: object) -> None:
        profile.enable()

    def stop(*_: object) -> None:
        profile.disable()
        profile.dump_stats(out / f"{next(phases, 'extra')}.prof")
        profile.clear()

    signal.signal(signal.SIGUSR1, start)
    signal.signal(signal.SIGUSR2, stop)
    main(argv)


def main() -> None:
    if sys.argv[1:2] == [SERVE_PROFILED]:  # the agent's own process: the rest is its command line
        _serve_profiled(Path(sys.argv[2]), sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--protocol", choices=["1.0", "0.3"], default="1.0")
    parser.add_argument("--profile", type=Path, help="folder for one cProfile file per phase")
    parser.add_argument("--mcp-url", help="an MCP server already running (default: start one)")
    args = parser.parse_args()
    from services.green_agent.evaluation.dataset import load_test_set
    from services.nfcorpus.dataset import load_qrels, load_queries
    from services.retrieval.settings import RetrievalSettings

    settings = RetrievalSettings()
    queries = load_queries(settings.data_dir)
    texts = [queries[q] for q in sorted(load_qrels(settings.data_dir, "dev"))][: args.queries]
    valid = load_test_set(settings.data_dir).doc_ids
    with contextlib.ExitStack() as stack:
        if args.mcp_url is None:
            # The result cache off: every query costs the MCP server a search, as in make bench.
            cache_off = {"MCP_RESULT_CACHE_ENTRIES": "0"}
            mcp = stack.enter_context(ServerProcess.module("services.mcp_server", env=cache_off))
            args.mcp_url = mcp.base_url + "/mcp"
        port = free_port()
        agent = ["--mcp-url", args.mcp_url, "--host", "127.0.0.1", "--port", str(port)]
        if args.profile is not None:
            args.profile.mkdir(parents=True, exist_ok=True)
            command = [
                sys.executable,
                "-m",
                __spec__.name,
                SERVE_PROFILED,
                str(args.profile),
                *agent,
            ]
        else:
            command = [sys.executable, "-m", "services.purple_agent", *agent]
        purple = stack.enter_context(ServerProcess(command, port))
        profiled = args.profile is not None
        figures = asyncio.run(_measure(purple, texts, valid, args.protocol, profiled))
    print(json.dumps(figures))


if __name__ == "__main__":
    main()
