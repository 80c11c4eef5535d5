"""Nothing grows without bound: memory after thousands of requests, disk across restarts.

The servers run as their own processes, warmed up first (model sessions, caches and pools fill
once); then a few thousand requests, valid and hostile, must leave RSS within a small margin.
Shard copies of an MCP server restarted and killed in turn must not pile up in its temporary
folder. ``make reliability`` runs the heavy variant (20 restarts, 10,000+ requests, replicas
behind HAProxy) and records the figures in docs/reliability.md.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from services.common.processes import ServerProcess
from tests.conftest import McpServer, SmallIndex
from tests.support.purple import v03_body

WARM_UP, REQUESTS = 200, 2000
RSS_MARGIN_KB = 24 * 1024


def _disk_bytes(folder: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in folder.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def purple_process(
    mcp_server: McpServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    log = tmp_path_factory.mktemp("leaks") / "purple.log"
    # A task store of 1 MB: the bound, not the default 16 MB, is what the test looks for.
    env = {"PURPLE_MCP_URL": mcp_server.mcp_url, "PURPLE_MAX_TASK_BYTES": str(2**20)}
    with ServerProcess.module("services.purple_agent", env=env, log_path=log) as server:
        yield server


def _mcp_request(i: int) -> dict[str, object]:
    if i % 2:  # hostile ones too: validation paths must not leak either
        return {"query": "x" * 3000, "top_k": "lots", "extra": [[[]]]}
    return {"query": f"dietary fiber and colon cancer {i % 50}", "top_k": 1 + i % 20}


def _a2a_request(i: int) -> dict[str, object]:
    if i % 4:  # failed tasks are as many tasks for the store to bound, and cheaper to make
        return v03_body("not json " * 50)
    return v03_body(json.dumps({"query": f"green tea catechins {i % 50}", "top_k": 5}))


def _growth_kb(
    server: ServerProcess, path: str, request: Callable[[int], object], max_status: int
) -> int:
    """RSS growth over :data:`REQUESTS` requests (each answered with at most ``max_status``),
    after :data:`WARM_UP` more to fill caches."""
    with httpx.Client(base_url=server.base_url, timeout=30) as client:
        for i in range(WARM_UP):
            client.post(path, json=request(i))
        before = server.rss_kb()
        for i in range(REQUESTS):
            assert client.post(path, json=request(i)).status_code <= max_status
    return server.rss_kb() - before


def test_the_mcp_server_holds_its_memory(mcp_server: McpServer) -> None:
    assert _growth_kb(mcp_server, "/search_nfcorpus", _mcp_request, 499) < RSS_MARGIN_KB


def test_the_purple_agent_holds_its_memory(purple_process: ServerProcess) -> None:
    assert _growth_kb(purple_process, "/", _a2a_request, 200) < RSS_MARGIN_KB


def test_restarts_and_kills_leave_no_shard_copies_behind(
    small_index: SmallIndex, tmp_path: Path
) -> None:
    scratch = tmp_path / "tmp"
    scratch.mkdir()
    env = {**small_index.env(private_copy=True), "TMPDIR": str(scratch)}
    server = ServerProcess.module("services.mcp_server", env=env, log_path=tmp_path / "mcp.log")
    copies = scratch / "nfcorpus-shard-copies"
    server.start()
    one_copy = _disk_bytes(copies)
    for round_ in range(6):
        if round_ % 2:
            server.signal(signal.SIGKILL)  # no clean-up possible: the next start sweeps
            server.wait(timeout_s=10)
        else:
            server.stop()
        server.start()
        assert len(list(copies.iterdir())) == 1  # this process's own, nothing older
        assert _disk_bytes(copies) <= one_copy * 1.1
    server.stop()
    assert list(copies.iterdir()) == []
