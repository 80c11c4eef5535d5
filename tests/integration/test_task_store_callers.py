"""One caller cannot push out another's tasks (issue 52, 7): the task store's bounds per caller.

The purple agent keeps tasks with authentication on; its MCP server is a closed port here, so
every task fails at once and is kept. Bob sends many tasks: his own oldest go, Alice's stays
readable; a third caller filling the store too drops the biggest holder's, still not Alice's.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.processes import ServerProcess, free_port
from tests.support.purple import v03_body

ALICE, BOB, CAROL = (f"{name}-token-0123456789" for name in ("alice", "bob", "carol"))
SCRAPE = "scrape-token-0123456789"


@pytest.fixture(scope="module")
def purple(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    folder: Path = tmp_path_factory.mktemp("task-callers")
    env = {
        "PURPLE_MCP_URL": f"http://127.0.0.1:{free_port()}/mcp",
        "PURPLE_MCP_RETRIES": "0",
        "PURPLE_AUTH_TOKENS": f"alice:{ALICE},bob:{BOB},carol:{CAROL}",
        "PURPLE_METRICS_TOKEN": SCRAPE,
        "PURPLE_MAX_TASKS": "6",
        "PURPLE_MAX_TASKS_PER_CALLER": "4",
    }
    agent = ServerProcess.module(
        "services.purple_agent", env=env, ready_path="/healthz", log_path=folder / "purple.log"
    )
    with agent:
        yield agent


def _call(base: str, token: str, body: dict[str, Any]) -> dict[str, Any]:
    headers = {"authorization": f"Bearer {token}"}
    answer: dict[str, Any] = httpx.post(base + "/", json=body, headers=headers, timeout=30).json()
    return answer


def _send(base: str, token: str) -> str:
    return str(_call(base, token, v03_body('{"query": "soy"}'))["result"]["id"])


def _kept(base: str, token: str, task_id: str) -> bool:
    get = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": task_id}}
    return "result" in _call(base, token, get)


def _stored(base: str) -> float:
    scrape = httpx.get(base + "/metrics", headers={"authorization": f"Bearer {SCRAPE}"})
    line = next(x for x in scrape.text.splitlines() if x.startswith("purple_task_store_tasks"))
    return float(line.split()[-1])


def test_one_caller_filling_the_store_does_not_evict_another_s_task(
    purple: ServerProcess,
) -> None:
    base = purple.base_url
    alice = _send(base, ALICE)
    bobs = [_send(base, BOB) for _ in range(10)]
    assert _kept(base, ALICE, alice)  # not pushed out by Bob's ten
    # Bob's own bound drops his own oldest.
    assert [_kept(base, BOB, t) for t in bobs] == [False] * 6 + [True] * 4
    # The store's bound still holds: Carol's tasks push out the biggest holder's, Bob's.
    carols = [_send(base, CAROL) for _ in range(4)]
    assert _kept(base, ALICE, alice)
    assert all(_kept(base, CAROL, t) for t in carols[-2:])
    assert _stored(base) <= 6
