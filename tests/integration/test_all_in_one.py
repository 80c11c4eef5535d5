"""The whole agent under one command: the MCP server and the agent, started, stopped and gone together.

``python -m services.all_in_one`` is the image's entrypoint; here it runs as a process on
loopback over the suite's small index, and is asked and stopped as a container would be.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.processes import BASE_ENV, REPO, McpServer, ServerProcess, free_port, port_in_use
from tests.support.purple import v03_body
from tests.support.small_index import SmallIndex


def _children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _whole(small_index: SmallIndex, log: Path, *args: str) -> tuple[ServerProcess, int]:
    mcp_port = free_port()
    agent = ServerProcess.module(
        "services.all_in_one",
        ["--mcp-port", str(mcp_port), *args],
        env=small_index.env(private_copy=True),
        log_path=log,
    )
    return agent, mcp_port


@pytest.fixture
def whole(small_index: SmallIndex, tmp_path: Path) -> Iterator[tuple[ServerProcess, int]]:
    agent, mcp_port = _whole(small_index, tmp_path / "all-in-one.log")
    agent.start()
    try:
        yield agent, mcp_port
    finally:
        agent.stop()


def test_one_command_answers_a_0_3_client_and_sigterm_stops_both(
    whole: tuple[ServerProcess, int],
) -> None:
    agent, mcp_port = whole
    ready = httpx.get(agent.base_url + "/readyz").json()
    assert ready["mcp"] == f"mcp at http://127.0.0.1:{mcp_port}/mcp"
    body = v03_body(json.dumps({"query": "vitamin D and bone health", "top_k": 5}))
    task = httpx.post(agent.base_url + "/", json=body, timeout=30).json()["result"]
    assert task["status"]["state"] == "completed"
    assert len(task["artifacts"][0]["parts"][0]["data"]["doc_ids"]) == 5
    assert agent.pid is not None and len(_children(agent.pid)) == 2
    agent.signal(signal.SIGTERM)
    assert agent.wait(timeout_s=30) == 0  # a requested stop is a clean exit
    assert not port_in_use(mcp_port) and not port_in_use(agent.port)


def test_a_server_that_dies_takes_the_whole_agent_down(
    whole: tuple[ServerProcess, int],
) -> None:
    agent, _ = whole
    assert agent.pid is not None
    mcp_pid, _ = _children(agent.pid)  # started first
    os.kill(mcp_pid, signal.SIGKILL)
    assert agent.wait(timeout_s=30) != 0  # the container restarts instead of half an agent
    assert not port_in_use(agent.port)


def test_a_named_search_server_starts_no_local_one(
    small_index: SmallIndex, mcp_server: McpServer, tmp_path: Path
) -> None:
    agent, mcp_port = _whole(small_index, tmp_path / "log", "--mcp-url", mcp_server.base_url)
    with agent:
        assert agent.pid is not None and len(_children(agent.pid)) == 1
        assert not port_in_use(mcp_port)
        ready = httpx.get(agent.base_url + "/readyz").json()
        assert ready["mcp"] == f"mcp at {mcp_server.mcp_url}"


def test_one_port_for_both_servers_is_refused_with_the_reason() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "services.all_in_one", "--port", "9123", "--mcp-port", "9123"],
        cwd=REPO,
        env={**os.environ, **BASE_ENV},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "--mcp-port 9123 is the agent's --port" in done.stderr
