"""CPU per answered query: the MCP server (tool and REST) against the in-process pipeline it wraps.

``python -m devtools.bench.mcp_cpu [--queries N] [--cache-entries N] [--profile F] [--ab N --b-env K=V]``

Wall-clock time is noisy on a shared machine; the server's CPU seconds (from /proc) per query are
not, and a profile's fractions even less so. Sends the dev query texts one at a time (top_k 10,
the abstracts included, as ``make bench`` does), first through the MCP tool, then through
``POST /search_nfcorpus``; with the result cache on, a second tool pass over the same texts
measures the hit path (and the REST pass is all hits too). ``--profile`` samples the server
with py-spy during the last tool pass and prints the event loop's heaviest frames. ``--ab``
runs two servers, A with the defaults and B with ``--b-env`` settings on top, and measures tool
passes on both in turn, the order alternating by round (with the cache on, every measured pass
is all hits).
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
from mcp import Client

from harness.processes import ServerProcess
from services.nfcorpus.dataset import load_qrels, load_queries
from services.retrieval.encoders.dense import OnnxMiniLM
from services.retrieval.query.pipeline import RankingPipeline
from services.retrieval.settings import RetrievalSettings
from services.retrieval.store import open_store

TOP_K = 10
#: The tool's arguments besides the query (``--purple-call``: what the purple agent asks).
TOOL_ARGUMENTS: dict[str, object] = {"top_k": TOP_K}
WARM_UP = 20


def dev_texts(settings: RetrievalSettings) -> list[str]:
    """The dev split's query texts, in a fixed order."""
    queries = load_queries(settings.data_dir)
    return [queries[q] for q in sorted(load_qrels(settings.data_dir, "dev")) if q in queries]


def in_process_ms(texts: list[str], settings: RetrievalSettings) -> float:
    """CPU ms per query of encode + retrieve-and-rank in this process, one thread."""
    store = open_store(settings.store.model_copy(update={"edge_private_copy": True}))
    try:
        searcher = RankingPipeline(store, OnnxMiniLM(threads=1), settings)
        for t in texts[:WARM_UP]:
            searcher.search(t, TOP_K)
        started = time.process_time()
        for t in texts:
            searcher.search(t, TOP_K)
        return (time.process_time() - started) * 1000 / len(texts)
    finally:
        store.close()


async def tool_calls(url: str, texts: list[str]) -> None:
    """One MCP tool call per text over one client."""
    async with Client(url) as client:
        for t in texts:
            result = await client.call_tool("search_nfcorpus", {"query": t, **TOOL_ARGUMENTS})
            assert not result.is_error, result


def tool_pass(server: ServerProcess, texts: list[str]) -> Callable[[], None]:
    """One pass of tool calls over ``texts`` against ``server``."""
    return lambda: asyncio.run(tool_calls(server.base_url + "/mcp", texts))


def rest_calls(base: str, texts: list[str]) -> None:
    """One ``POST /search_nfcorpus`` per text over one keep-alive connection."""
    with httpx.Client(base_url=base) as client:
        for t in texts:
            client.post("/search_nfcorpus", json={"query": t, "top_k": TOP_K}).raise_for_status()


def thread_seconds(pid: int) -> tuple[float, float]:
    """CPU seconds of the event loop's thread and of all the others (from /proc)."""
    main = others = 0.0
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            fields = (task / "stat").read_text().rsplit(")", 1)[1].split()
        except FileNotFoundError:  # a worker thread that just ended
            continue
        seconds = (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        if task.name == str(pid):
            main += seconds
        else:
            others += seconds
    return main, others


def server_ms(server: ServerProcess, run: Callable[[], None], n: int) -> tuple[float, float, float]:
    """Server CPU ms per query while ``run`` sends ``n`` queries: all, event loop, others."""
    assert server.pid is not None
    before, (main0, others0) = server.cpu_seconds(), thread_seconds(server.pid)
    run()
    after, (main1, others1) = server.cpu_seconds(), thread_seconds(server.pid)
    return tuple(x * 1000 / n for x in (after - before, main1 - main0, others1 - others0))  # type: ignore[return-value]


def show(what: str, ms: tuple[float, float, float]) -> None:
    """One measurement line."""
    print(f"{what}: {ms[0]:.2f} ms CPU/query (event loop {ms[1]:.2f}, other threads {ms[2]:.2f})")


#: Frames of a thread that waits (py-spy samples them all the same): left out of the shares.
IDLE_FRAMES = ("Condition.wait", "EpollSelector.select", "Queue.get")


def heaviest(stacks: Path, top: int = 40) -> str:
    """Busy samples by thread, and the event loop's frames by inclusive and own share.

    Reads py-spy's collapsed format (``--threads``: the thread is the first frame).
    """
    inclusive: collections.Counter[str] = collections.Counter()
    own: collections.Counter[str] = collections.Counter()
    threads: collections.Counter[str] = collections.Counter()
    for line in stacks.read_text().splitlines():
        frames, _, count = line.rpartition(" ")
        names, n = frames.split(";"), int(count)
        if names[-1].startswith(IDLE_FRAMES):
            continue
        loop = "MainThread" in names[0]
        threads["event loop" if loop else "other threads"] += n
        if loop:
            inclusive.update(dict.fromkeys(names[1:], n))
            own[names[-1]] += n
    total = threads["event loop"] or 1
    lines = [f"busy samples: {dict(threads)}", "event loop, inclusive:"]
    lines += [f"{c / total:6.1%}  {name}" for name, c in inclusive.most_common(top)]
    lines += ["event loop, own:"] + [
        f"{c / total:6.1%}  {name}" for name, c in own.most_common(top)
    ]
    return "\n".join(lines)


@contextlib.contextmanager
def profiled(pid: int, out: Path | None) -> Iterator[None]:
    """Sample ``pid`` with py-spy into ``out`` (collapsed stacks) while the block runs."""
    if out is None:
        yield
        return
    py_spy = shutil.which("py-spy") or str(Path(sys.executable).parent / "py-spy")
    argv = [py_spy, "record", "--pid", str(pid), "--rate", "200", "--threads"]
    spy = subprocess.Popen(
        [*argv, "--format", "raw", "--output", str(out)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    time.sleep(1.0)  # attached
    try:
        yield
    finally:
        spy.send_signal(signal.SIGINT)  # py-spy writes its output on SIGINT
        spy.wait(timeout=30)


def ab(texts: list[str], env: dict[str, str], b_env: dict[str, str], rounds: int) -> None:
    """Interleaved tool passes against a server with the defaults (A) and one with ``b_env`` (B)."""
    runs: dict[str, list[tuple[float, float, float]]] = {"A": [], "B": []}
    log = Path(tempfile.gettempdir()) / "mcp_cpu_server.log"
    with contextlib.ExitStack() as stack:
        servers = {
            name: stack.enter_context(
                ServerProcess.module("services.mcp_server", env={**env, **extra}, log_path=log)
            )
            for name, extra in (("A", {}), ("B", b_env))
        }
        for server in servers.values():
            tool_pass(server, [f"{t} (warm-up)" for t in texts[:WARM_UP]])()
            if env["MCP_RESULT_CACHE_ENTRIES"] != "0":
                tool_pass(server, texts)()  # every measured pass is all hits
        for i in range(rounds):
            for name in ("A", "B") if i % 2 == 0 else ("B", "A"):
                ms = server_ms(servers[name], tool_pass(servers[name], texts), len(texts))
                runs[name].append(ms)
                show(f"round {i + 1} {name}", ms)
    b_label = " ".join(f"{k}={v}" for k, v in b_env.items()) or "the defaults"
    for name, label in (("A", "the defaults"), ("B", b_label)):
        total, loop, others = (statistics.median(r[k] for r in runs[name]) for k in range(3))
        show(f"median {name} ({label}, {len(texts)} queries x {rounds})", (total, loop, others))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--queries", type=int, default=0, help="first N dev queries (0: all)")
    parser.add_argument("--cache-entries", type=int, default=0, help="MCP_RESULT_CACHE_ENTRIES")
    parser.add_argument(
        "--profile", type=Path, help="write py-spy stacks of the (last) tool pass here"
    )
    parser.add_argument("--skip-in-process", action="store_true")
    parser.add_argument("--ab", type=int, default=0, help="rounds of A/B (see --b-env)")
    parser.add_argument(
        "--b-env", action="append", default=[], metavar="KEY=VALUE", help="server B's settings"
    )
    parser.add_argument("--purple-call", action="store_true", help="top_k 20, no abstracts")
    args = parser.parse_args()
    if args.purple_call:
        TOOL_ARGUMENTS.update(top_k=20, include_text=False)
    settings = RetrievalSettings()
    texts = dev_texts(settings)
    texts = texts[: args.queries] if args.queries else texts
    if args.ab:
        env = {"RETRIEVAL_EDGE_PRIVATE_COPY": "true"}
        b_env = dict(pair.split("=", 1) for pair in args.b_env)
        ab(texts, {**env, "MCP_RESULT_CACHE_ENTRIES": str(args.cache_entries)}, b_env, args.ab)
        return
    if not args.skip_in_process:
        print(f"in-process pipeline: {in_process_ms(texts, settings):.2f} ms CPU/query")
    env = {
        "RETRIEVAL_EDGE_PRIVATE_COPY": "true",
        "MCP_RESULT_CACHE_ENTRIES": str(args.cache_entries),
    }
    log = Path(tempfile.gettempdir()) / "mcp_cpu_server.log"
    with ServerProcess.module("services.mcp_server", env=env, log_path=log) as server:
        url = server.base_url + "/mcp"
        warm_up = [f"{t} (warm-up)" for t in texts[:WARM_UP]]  # never the measured questions
        asyncio.run(tool_calls(url, warm_up))
        rest_calls(server.base_url, warm_up)
        tool_pass = lambda: asyncio.run(tool_calls(url, texts))  # noqa: E731
        # The profile covers the last tool pass: the hit path when the cache is on.
        with profiled(server.pid or 0, None if args.cache_entries else args.profile):
            tool = server_ms(server, tool_pass, len(texts))
        show(f"MCP tool ({len(texts)} queries)", tool)
        if args.cache_entries:
            with profiled(server.pid or 0, args.profile):
                hit = server_ms(server, tool_pass, len(texts))
            show("MCP tool, every answer cached", hit)
        rest = server_ms(server, lambda: rest_calls(server.base_url, texts), len(texts))
        show("REST, every answer cached" if args.cache_entries else "REST", rest)
    if args.profile:
        print(heaviest(args.profile))


if __name__ == "__main__":
    main()
