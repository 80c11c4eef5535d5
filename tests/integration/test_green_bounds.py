"""The green agent's A2A server bounds what its callers make it hold and run.

``python -m services.green_agent serve`` on loopback, as the compose scenario runs it (no
authentication), with ``GREEN_MAX_RUNNING=2`` and a participant that holds every query until the
test lets it go: a burst of sends starts two assessments and refuses the rest at once, no task
is kept or readable once it ends, and a web page's ``text/plain`` post never starts one. With
authentication on, a non-blocking send is answered at once, and each caller reads its own tasks
only.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from a2a.server.request_handlers.response_helpers import agent_card_to_dict

from harness.processes import ServerProcess
from services.purple_agent.a2a.card import build_card
from services.purple_agent.settings import PurpleSettings
from tests.support.polling import wait_for
from tests.support.purple import ThreadedServer, v03_body

ALICE = "alice:alice-token-0123456789"
BOB = "bob:bob-token-0123456789"
SCRAPE = "scrape-token-0123456789"  # with callers' tokens, /metrics wants its own
BURST = 8


class HeldParticipant:
    """An A2A agent whose card answers at once and whose every message waits for :meth:`free`."""

    def __init__(self) -> None:
        self.released = threading.Event()
        self.messages = 0
        participant = self

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                card = agent_card_to_dict(build_card(PurpleSettings(card_url=participant.url)))
                self._answer(200, json.dumps(card).encode())

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers["content-length"]))
                participant.messages += 1
                participant.released.wait(60)
                self._answer(500, b"{}")  # each query fails; the assessment still ends

            def _answer(self, status: int, body: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(body)))
                    self.end_headers()
                    self.wfile.write(body)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the evaluator gave up on this query first

            def log_message(self, *_: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def free(self) -> None:
        """Let every held message (and every later one) be answered."""
        self.released.set()


@pytest.fixture
def participant() -> Iterator[HeldParticipant]:
    held = HeldParticipant()
    held.thread.start()
    try:
        yield held
    finally:
        held.free()
        held.server.shutdown()
        held.server.server_close()


def _green(env: dict[str, str], log: Any) -> ServerProcess:
    settings = {"GREEN_MAX_RUNNING": "2", "GREEN_TIMEOUT_S": "60", **env}
    return ServerProcess.module(
        "services.green_agent", ["serve"], env=settings, ready_path="/healthz", log_path=log
    )


def _send(
    green: ServerProcess, participant: str, *, token: str | None = None, blocking: bool = True
) -> httpx.Response:
    """A 0.3 ``message/send`` of one assessment (not ``blocking``: answered once its task exists)."""
    request = {
        "participants": {"retrieval_agent": participant},
        "config": {"num_queries": 2, "top_k": 5, "random_seed": 42, "concurrency": 1},
    }
    body = v03_body(json.dumps(request))
    body["params"]["configuration"] = {"blocking": blocking}
    headers = {"authorization": f"Bearer {token.split(':')[1]}"} if token else {}
    return httpx.post(green.base_url + "/", json=body, headers=headers, timeout=60)


def _gauge(green: ServerProcess, name: str) -> float:
    scrape = {"authorization": f"Bearer {SCRAPE}"}  # ignored where authentication is off
    for line in httpx.get(green.base_url + "/metrics", headers=scrape).text.splitlines():
        if line.startswith(f"{name} "):
            return float(line.split()[1])
    raise AssertionError(f"{name} not exported")


def _rpc(green: ServerProcess, method: str, params: dict[str, Any], token: str | None) -> Any:
    """A2A 1.0 ``method`` (``GetTask``, ``ListTasks``) as ``token``'s caller (None: anonymous)."""
    body = {"jsonrpc": "2.0", "id": 7, "method": method, "params": params}
    headers = {"a2a-version": "1.0"}
    if token is not None:
        headers["authorization"] = f"Bearer {token.split(':')[1]}"
    return httpx.post(green.base_url + "/", json=body, headers=headers, timeout=30).json()


def test_a_burst_of_sends_runs_at_most_the_bound(
    participant: HeldParticipant, tmp_path: Any
) -> None:
    with _green({}, tmp_path / "green.log") as green, ThreadPoolExecutor(BURST) as pool:
        sends = [pool.submit(_send, green, participant.url) for _ in range(BURST)]
        # Two are admitted and wait for their assessments; the rest are refused at once.
        wait_for(lambda: sum(s.done() for s in sends) == BURST - 2, 60, "the refusals")
        for answer in [s.result() for s in sends if s.done()]:
            assert answer.status_code == 503 and answer.headers["retry-after"] == "30"
            error = answer.json()["error"]
            assert error["code"] == -32000
            assert error["message"] == (
                "2 assessments are running, the most GREEN_MAX_RUNNING allows: send again later"
            )
        # The two assessments hold their places while they run.
        wait_for(lambda: participant.messages == 2, 60, "two assessments asking")
        assert _gauge(green, "green_assessments_running") == 2
        assert _send(green, participant.url).status_code == 503
        assert _gauge(green, "green_assessments_refused_total") == BURST - 2 + 1
        # Without authentication nobody may read tasks back: they would be anybody's.
        assert _rpc(green, "ListTasks", {}, None)["result"].get("tasks", []) == []
        participant.free()
        admitted = [s.result() for s in sends if s.result().status_code == 200]
        assert len(admitted) == 2, [s.result().text for s in sends]
        assert all(
            a.json()["result"]["status"]["state"] in ("completed", "failed") for a in admitted
        )
        task_id = admitted[0].json()["result"]["id"]
        got = _rpc(green, "GetTask", {"id": task_id}, None)
        assert got["error"]["code"] == -32001  # task not found, as any other caller's
        # Both ended: their places came back, and no finished task stays in memory.
        wait_for(lambda: _gauge(green, "green_assessments_running") == 0, 60, "places back")
        wait_for(lambda: _gauge(green, "green_task_store_tasks") == 0, 60, "tasks gone")
        again = _send(green, participant.url)
        assert again.status_code == 200, again.text


def test_a_web_pages_text_plain_post_starts_no_assessment(
    participant: HeldParticipant, tmp_path: Any
) -> None:
    # A page may POST text/plain to a loopback port without asking (no CORS preflight).
    body = json.dumps(v03_body(json.dumps({"participants": {"retrieval_agent": participant.url}})))
    with _green({}, tmp_path / "green.log") as green:
        for kind in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data"):
            answer = httpx.post(green.base_url + "/", content=body, headers={"content-type": kind})
            assert answer.status_code == 415, answer.text
            assert "JSON-RPC takes Content-Type: application/json" in answer.text
        assert participant.messages == 0 and _gauge(green, "green_assessments_running") == 0


def test_with_authentication_each_caller_reads_its_own_tasks_only(
    participant: HeldParticipant, tmp_path: Any
) -> None:
    participant.free()
    env = {"GREEN_AUTH_TOKENS": f"{ALICE},{BOB}", "GREEN_METRICS_TOKEN": SCRAPE}
    with _green(env, tmp_path / "green.log") as green:
        sent = _send(green, participant.url, token=ALICE, blocking=False)
        assert sent.status_code == 200, sent.text
        assert sent.json()["result"]["status"]["state"] in ("submitted", "working")
        task_id = sent.json()["result"]["id"]

        def ended() -> bool:
            task = _rpc(green, "GetTask", {"id": task_id}, ALICE).get("result", {})
            state = task.get("status", {}).get("state")
            return state in ("TASK_STATE_COMPLETED", "TASK_STATE_FAILED")

        wait_for(ended, 60, "the task ended")
        mine = _rpc(green, "ListTasks", {}, ALICE)["result"]
        assert [t["id"] for t in mine["tasks"]] == [task_id]
        assert all(not t.get("history") for t in mine["tasks"])  # no request text kept
        assert _rpc(green, "ListTasks", {}, BOB)["result"].get("tasks", []) == []
        assert "error" in _rpc(green, "GetTask", {"id": task_id}, BOB)
        assert _gauge(green, "green_task_store_tasks") == 1


@pytest.mark.parametrize("kind", ["text/plain", None])
def test_the_purple_agent_and_the_mcp_server_refuse_other_content_types_too(
    kind: str | None, mcp_server: Any, tmp_path: Any
) -> None:
    headers = {"content-type": kind} if kind else {}
    body = json.dumps(v03_body(json.dumps({"query": "soy", "top_k": 5})))
    with ThreadedServer(PurpleSettings(mcp_url=mcp_server.mcp_url)) as purple:
        answer = httpx.post(purple.url + "/", content=body, headers=headers)
    assert answer.status_code == 415 and "application/json" in answer.text
    mcp = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {"accept": "application/json, text/event-stream"}
    answer = httpx.post(mcp_server.mcp_url, content=json.dumps(mcp), headers={**headers, **accept})
    assert answer.status_code == 415 and "application/json" in answer.text
