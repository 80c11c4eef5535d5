"""The purple agent's HTTP pool against httpx and httpx2: CPU per query and memory, alternated.

``python -m devtools.bench.http_pool_ab [--rounds 3] [--queries 200]`` starts one MCP server
(result cache off), then, round after round, the purple agent three times: with its own pool
(asyncio streams, answers parsed by httptools: :mod:`services.common.http_pool`),
and with that pool's interface served by an ``httpx.AsyncClient`` and by an
``httpx2.AsyncClient`` (the HTTP client the MCP SDK brings). Each agent answers the same dev queries at concurrency 1 and 16, as
:mod:`.profile_purple` measures them; the figures are the purple process's CPU per answered query
and its resident memory after the run. Medians over the rounds and the ratios to our own pool go to
``reports/http_pool.json``. The rule it serves: a well-kept library's pool unless ours saves at
least a fifth of the process's CPU or memory.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import importlib
import json
import sys
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from statistics import median
from typing import Any
from urllib.parse import urlsplit

from devtools.bench.profile_purple import _measure
from harness.processes import ServerProcess, free_port
from services.common.http_pool import (
    ConnectFailed,
    ConnectionBroken,
    OriginPool,
    Response,
)

LIBRARIES = ("ours", "httpx", "httpx2")
SERVE = "--serve"


class _LibraryResponse:
    """The pool's ``Response`` interface over a streamed httpx (or httpx2) response."""

    def __init__(self, response: Any, broken: type[Exception]) -> None:
        self._response = response
        self._broken = broken
        self.status = int(response.status_code)
        self.headers = {k.lower(): v for k, v in response.headers.items()}
        self.complete = False

    async def chunks(self) -> AsyncIterator[bytes]:
        try:
            async for chunk in self._response.aiter_raw():
                yield chunk
        except self._broken as e:
            raise ConnectionBroken(f"{type(e).__name__}: {e}") from e
        self.complete = True

    read = Response.read  # the pool's own: it only reads :meth:`chunks`


def library_pool(name: str) -> type:
    """A class with ``OriginPool``'s interface whose connections are ``name``'s ``AsyncClient``."""
    lib = importlib.import_module(name)

    class LibraryPool:
        def __init__(self, url: str, max_connections: int) -> None:
            parsed = urlsplit(url)
            self._origin = f"{parsed.scheme}://{parsed.netloc}"
            self.authority = parsed.netloc.rpartition("@")[2].encode()
            limits = lib.Limits(
                max_connections=max_connections, max_keepalive_connections=max_connections
            )
            # Timeouts stay the caller's (asyncio.timeout around each call), as with our pool.
            self._client = lib.AsyncClient(timeout=None, limits=limits)

        post = OriginPool.post  # the pool's own: a POST through :meth:`request`

        @asynccontextmanager
        async def request(
            self, method: str, target: str, headers: list[tuple[bytes, bytes]], body: bytes = b""
        ) -> AsyncIterator[_LibraryResponse]:
            request = self._client.build_request(
                method, self._origin + target, headers=headers, content=body
            )
            try:
                response = await self._client.send(request, stream=True)
            except lib.ConnectError as e:
                raise ConnectFailed(f"{type(e).__name__}: {e}") from e
            except lib.TransportError as e:
                raise ConnectionBroken(f"{type(e).__name__}: {e}") from e
            try:
                yield _LibraryResponse(response, lib.TransportError)
            finally:
                await response.aclose()

        async def aclose(self) -> None:
            await self._client.aclose()

    return LibraryPool


def _serve(library: str, argv: list[str]) -> None:
    """The purple agent, its pool replaced by ``library``'s unless that is our own."""
    from services.purple_agent.__main__ import main
    from services.purple_agent.search import client

    if library != "ours":
        setattr(client, "OriginPool", library_pool(library))  # noqa: B010 (the class the client builds its pool from)
    main(argv)


def _figures(mcp_url: str, library: str, texts: list[str], valid: frozenset[str]) -> dict[str, Any]:
    port = free_port()
    agent = ["--mcp-url", mcp_url, "--host", "127.0.0.1", "--port", str(port)]
    command = [sys.executable, "-m", __spec__.name, SERVE, library, *agent]
    with ServerProcess(command, port) as purple:
        figures = asyncio.run(_measure(purple, texts, valid, "1.0", profiled=False))
        figures["rss_mb"] = round(purple.rss_kb() / 1024, 1)
    return figures


def main() -> None:
    if sys.argv[1:2] == [SERVE]:
        _serve(sys.argv[2], sys.argv[3:])
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--out", type=Path, default=Path("reports/http_pool.json"))
    args = parser.parse_args()
    from services.green_agent.evaluation.dataset import load_test_set
    from services.nfcorpus.dataset import load_qrels, load_queries
    from services.retrieval.settings import RetrievalSettings

    settings = RetrievalSettings()
    queries = load_queries(settings.data_dir)
    texts = [queries[q] for q in sorted(load_qrels(settings.data_dir, "dev"))][: args.queries]
    valid = load_test_set(settings.data_dir).doc_ids
    runs: dict[str, list[dict[str, Any]]] = {lib: [] for lib in LIBRARIES}
    with contextlib.ExitStack() as stack:
        cache_off = {"MCP_RESULT_CACHE_ENTRIES": "0"}
        mcp = stack.enter_context(ServerProcess.module("services.mcp_server", env=cache_off))
        for round_ in range(args.rounds):
            for lib in LIBRARIES:
                runs[lib].append(_figures(mcp.base_url + "/mcp", lib, texts, valid))
                print(round_, lib, json.dumps(runs[lib][-1]), flush=True)
    summary: dict[str, dict[str, float]] = {}
    for lib, rows in runs.items():
        summary[lib] = {
            "c1_cpu_ms": median(r["c1"]["purple_cpu_ms_per_query"] for r in rows),
            "c16_cpu_ms": median(r["c16"]["purple_cpu_ms_per_query"] for r in rows),
            "rss_mb": median(r["rss_mb"] for r in rows),
        }
    for lib in LIBRARIES[1:]:
        summary[f"{lib}/ours"] = {
            k: round(summary[lib][k] / summary["ours"][k], 3)
            for k in ("c1_cpu_ms", "c16_cpu_ms", "rss_mb")
        }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(
        json.dumps({"queries": len(texts), "runs": runs, "medians": summary}, indent=2)
    )
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
