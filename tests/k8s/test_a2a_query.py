"""The `helm test` script (helm/nfcorpus-retrieval/files/a2a_query.py) against a fake purple agent."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from tests.k8s.rendering import load_query_script
from tests.support.ports import closed_url

Answer = Callable[[dict[str, Any]], dict[str, Any]]


a2a_query = load_query_script()


def completed(doc_ids: list[str]) -> dict[str, Any]:
    """A 0.3 JSON-RPC answer: a completed task with one data artifact."""
    return {
        "kind": "task",
        "status": {"state": "completed"},
        "artifacts": [
            {"name": "retrieval_results", "parts": [{"kind": "data", "data": {"doc_ids": doc_ids}}]}
        ],
    }


@pytest.fixture
def agent() -> Iterator[Callable[..., str]]:
    """A fake purple agent answering JSON-RPC calls with the given functions, in order; with a
    ``token``, like the real one with authentication on: 401 without ``Bearer <token>``."""
    servers: list[ThreadingHTTPServer] = []

    def start(answers: list[Answer], token: str | None = None) -> str:
        requests: list[dict[str, Any]] = []

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def _send(self, body: object, status: int = 200) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                assert self.path == "/.well-known/agent-card.json"
                self._send({"name": "fake purple agent", "url": "http://fake/"})

            def do_POST(self) -> None:
                request = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                if token is not None and self.headers["Authorization"] != f"Bearer {token}":
                    self._send({"jsonrpc": "2.0", "id": None, "error": {"code": -32001}}, 401)
                    return
                requests.append(request)
                answer = answers[min(len(requests), len(answers)) - 1]
                self._send({"jsonrpc": "2.0", "id": request["id"], "result": answer(request)})

        server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=server.serve_forever, args=(0.01,), daemon=True).start()
        servers.append(server)
        return f"http://127.0.0.1:{server.server_address[1]}/"

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def test_sends_the_agentbeats_request_and_accepts_a_valid_answer(agent) -> None:
    seen: list[dict[str, Any]] = []

    def answer(request: dict[str, Any]) -> dict[str, Any]:
        seen.append(request)
        return completed(["MED-1", "MED-2", "MED-3"])

    url = agent([answer])
    assert a2a_query.query(url, "vitamin d", 3, wait_s=5) == ["MED-1", "MED-2", "MED-3"]
    (request,) = seen
    assert request["method"] == "message/send"
    (part,) = request["params"]["message"]["parts"]
    assert json.loads(part["text"]) == {"query": "vitamin d", "top_k": 3}


def test_retries_while_the_agent_fails_then_succeeds(
    agent, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(a2a_query, "RETRY_S", 0.01)
    failed: Answer = lambda _: {"kind": "task", "status": {"state": "failed"}}  # noqa: E731
    url = agent([failed, lambda _: completed(["a", "b"])])
    assert a2a_query.query(url, "q", 2, wait_s=10) == ["a", "b"]


@pytest.mark.parametrize(
    ("doc_ids", "message"),
    [
        (["a", "a"], "expected 2 unique ids"),
        (["a"], "expected 2 unique ids"),
        ([1, 2], "not a list of ids"),
    ],
)
def test_rejects_answers_that_break_the_contract(agent, doc_ids: list[Any], message: str) -> None:
    url = agent([lambda _: completed(doc_ids)])
    with pytest.raises(SystemExit, match=message):
        a2a_query.query(url, "q", 2, wait_s=5)


def test_gives_up_when_no_card_is_served() -> None:
    with closed_url() as nobody, pytest.raises(SystemExit, match="no agent card"):
        a2a_query.wait_for_card(nobody, wait_s=0)


def test_reads_the_a2a_1_0_shape_too() -> None:
    result = {
        "task": {
            "status": {"state": "TASK_STATE_COMPLETED"},
            "artifacts": [{"parts": [{"data": {"doc_ids": ["x"]}}]}],
        }
    }
    assert a2a_query.find_key(result, "doc_ids") == ["x"]
    assert a2a_query.find_key(result, "state") == "TASK_STATE_COMPLETED"


TOKEN = "s3cr3t-token-0123456789abcdef"


def test_sends_the_bearer_token_when_the_agent_requires_one(agent) -> None:
    url = agent([lambda _: completed(["a", "b"])], token=TOKEN)
    assert a2a_query.query(url, "q", 2, wait_s=5, token=TOKEN) == ["a", "b"]


@pytest.mark.parametrize(
    ("token", "message"), [(None, "requires a token"), ("wrong-token-0123456789", "refused")]
)
def test_a_refused_token_fails_at_once_instead_of_retrying(
    agent, token: str | None, message: str
) -> None:
    url = agent([lambda _: completed(["a", "b"])], token=TOKEN)
    with pytest.raises(SystemExit, match=message):
        a2a_query.query(url, "q", 2, wait_s=600, token=token)


def test_reads_the_first_token_of_the_agents_token_file(tmp_path) -> None:
    tokens = tmp_path / "tokens"
    tokens.write_text(f"# callers\n\n  green-agent:{TOKEN}  \nother:second-token-0123456789\n")
    assert a2a_query.read_token(str(tokens)) == TOKEN
    tokens.write_text(f"{TOKEN}\n")
    assert a2a_query.read_token(str(tokens)) == TOKEN
    tokens.write_text("# nothing but a comment\n")
    with pytest.raises(SystemExit, match="no token"):
        a2a_query.read_token(str(tokens))
