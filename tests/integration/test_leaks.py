"""Nothing grows without bound: the stores that keep state stay in their bounds, disk across restarts.

The servers run as their own processes. A few thousand requests, valid and hostile, go to each;
what either server keeps from one request to the next (the MCP server's result cache, the
purple agent's task store) must then hold no more than its configured bounds, as its own gauges
report. Shard copies of an MCP server restarted and killed in turn must not pile up in its
temporary folder. How resident memory moves under load is a figure of the machine (allocator
arenas per core, transparent huge pages), not a test: ``make reliability`` runs the heavy
variant (20 restarts, 10,000+ requests, replicas behind HAProxy) and records RSS in
docs/reliability.md.
"""

from __future__ import annotations

import json
import re
import signal
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from harness.processes import ServerProcess
from tests.support.purple import v03_body
from tests.support.small_index import SmallIndex

REQUESTS = 2000
CACHE_ENTRIES, CACHE_BYTES = 32, 256 * 1024  # small, so the load passes them many times over
MAX_TASKS, MAX_TASK_BYTES = 500, 64 * 1024
TOKEN = "leak-test-token-0123456789"  # tasks are kept only for callers who sign in
SCRAPE = "leak-test-scrape-0123456789"  # with callers' tokens, /metrics wants its own


def _disk_bytes(folder: Path) -> int:
    return sum(p.stat().st_blocks * 512 for p in folder.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def mcp_process(
    small_index: SmallIndex, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    log = tmp_path_factory.mktemp("leaks") / "mcp.log"
    bounds = {
        "MCP_RESULT_CACHE_ENTRIES": str(CACHE_ENTRIES),
        "MCP_RESULT_CACHE_BYTES": str(CACHE_BYTES),
    }
    env = {**small_index.env(private_copy=True), **bounds}
    with ServerProcess.module("services.mcp_server", env=env, log_path=log) as server:
        yield server


@pytest.fixture(scope="module")
def purple_process(
    mcp_process: ServerProcess, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    log = tmp_path_factory.mktemp("leaks") / "purple.log"
    env = {
        "PURPLE_MCP_URL": mcp_process.base_url + "/mcp",
        "PURPLE_MAX_TASKS": str(MAX_TASKS),
        "PURPLE_MAX_TASK_BYTES": str(MAX_TASK_BYTES),
        "PURPLE_AUTH_TOKENS": f"tester:{TOKEN}",
        "PURPLE_METRICS_TOKEN": SCRAPE,
    }
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


def _load(
    server: ServerProcess,
    path: str,
    request: Callable[[int], object],
    max_status: int,
    headers: dict[str, str] | None = None,
) -> None:
    """:data:`REQUESTS` requests, each answered with at most ``max_status``."""
    with httpx.Client(base_url=server.base_url, timeout=30, headers=headers) as client:
        for i in range(REQUESTS):
            assert client.post(path, json=request(i)).status_code <= max_status


def _gauge(server: ServerProcess, name: str) -> float:
    scrape = {"authorization": f"Bearer {SCRAPE}"}  # ignored where authentication is off
    metrics = httpx.get(server.base_url + "/metrics", headers=scrape).text
    (value,) = re.findall(rf"^{name} (\S+)$", metrics, flags=re.MULTILINE)
    return float(value)


def test_the_mcp_server_keeps_its_cache_within_bounds(mcp_process: ServerProcess) -> None:
    _load(mcp_process, "/search_nfcorpus", _mcp_request, 499)  # 1,000 distinct searches
    assert 0 < _gauge(mcp_process, "mcp_result_cache_entries") <= CACHE_ENTRIES
    assert 0 < _gauge(mcp_process, "mcp_result_cache_bytes") <= CACHE_BYTES


def test_the_purple_agent_keeps_its_tasks_within_bounds(purple_process: ServerProcess) -> None:
    _load(purple_process, "/", _a2a_request, 200, {"authorization": f"Bearer {TOKEN}"})
    tasks = _gauge(purple_process, "purple_task_store_tasks")
    assert 0 < tasks <= MAX_TASKS and tasks < REQUESTS  # the oldest were dropped
    assert 0 < _gauge(purple_process, "purple_task_store_bytes") <= MAX_TASK_BYTES


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
