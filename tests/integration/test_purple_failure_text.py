"""A failed task tells its caller what failed and nothing of the cluster inside (issue 52, 7).

The purple agent's caller is outside the cluster; the MCP server's address is not theirs to
know. The agent runs as a process here, pointed at a port nothing listens on: the task fails
saying the search service is unreachable, the URL goes to the agent's log only, with the task id.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

import httpx
import pytest

from harness.processes import ServerProcess, free_port
from tests.support.purple import v03_body

TOKEN = "alice-token-0123456789"


@pytest.fixture(scope="module")
def closed_port() -> int:
    return free_port()  # nothing listens on it: every connection is refused


@pytest.fixture(scope="module")
def purple(tmp_path_factory: pytest.TempPathFactory, closed_port: int) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("failure-text")
    env = {
        "PURPLE_MCP_URL": f"http://127.0.0.1:{closed_port}/mcp",
        "PURPLE_MCP_RETRIES": "0",
        "PURPLE_AUTH_TOKENS": f"alice:{TOKEN}",  # tasks are kept: GetTask reads one back
    }
    agent = ServerProcess.module(
        "services.purple_agent", env=env, ready_path="/healthz", log_path=folder / "purple.log"
    )
    with agent:
        yield agent


def _internal_names(text: str, port: int) -> list[str]:
    return [name for name in ("127.0.0.1", str(port), "http://", "/mcp") if name in text]


def test_a_failed_task_names_no_internal_url(purple: ServerProcess, closed_port: int) -> None:
    headers = {"authorization": f"Bearer {TOKEN}"}
    with httpx.Client(base_url=purple.base_url, headers=headers, timeout=30) as http:
        sent = http.post("/", json=v03_body('{"query": "green tea", "top_k": 3}')).json()
        task = sent["result"]
        read = http.post(
            "/",
            json={"jsonrpc": "2.0", "id": 2, "method": "tasks/get", "params": {"id": task["id"]}},
        ).json()["result"]
    assert task["status"]["state"] == "failed"
    for answer in (json.dumps(task), json.dumps(read)):
        assert _internal_names(answer, closed_port) == [], answer
    (part,) = task["status"]["message"]["parts"]
    assert part["text"] == "retrieval failed: the search service is unreachable"
    # The operator still learns where and why, from the log line of the task.
    logged = [
        line
        for line in purple.log().splitlines()
        if task["id"] in line and f"127.0.0.1:{closed_port}/mcp" in line
    ]
    assert logged, purple.log()
