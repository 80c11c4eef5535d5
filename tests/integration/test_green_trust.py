"""The green agent's A2A server trusts no caller: tokens in, and requests out only to allowed origins.

The server runs as ``python -m services.green_agent serve`` on loopback with callers' tokens and
an allow-list that names the purple agent, a recording participant and the MCP server, each by
its port. A plain listening socket on another loopback port stands for any other address: no
connection may ever reach it, whatever an assessment, an agent card or a redirect names.
"""

from __future__ import annotations

import json
import select
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from a2a.server.request_handlers.response_helpers import agent_card_to_dict

from harness.processes import McpServer, ServerProcess, free_port
from services.green_agent.assessment.card import build_card
from services.purple_agent.settings import PurpleSettings
from tests.support.green import run_green
from tests.support.purple import ThreadedServer, v03_body

CALLER = "assessor-token-0123456789"  # what the green agent accepts from its callers
AGENT_TOKEN = "evaluator-token-0123456789"  # what the green agent sends to the agent it evaluates


class Recorder:
    """A participant that records what reaches it and answers the card with ``card`` (or a 307)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, str, str | None]] = []  # method, path, Authorization
        self.card: dict[str, Any] = {}
        self.redirect_to: str | None = None
        recorder = self

        class Handler(BaseHTTPRequestHandler):
            def _record(self) -> None:
                recorder.seen.append((self.command, self.path, self.headers["authorization"]))

            def do_GET(self) -> None:
                self._record()
                if recorder.redirect_to is not None:
                    self.send_response(307)
                    self.send_header("location", recorder.redirect_to)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                body = json.dumps(recorder.card).encode()
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:
                self._record()
                self.send_response(404)
                self.send_header("content-length", "0")
                self.end_headers()

            def log_message(self, *_: object) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)


class Trap:
    """A listening socket on a port outside the allow-list; :meth:`reached` by any connection."""

    def __init__(self) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        self.socket.listen(8)
        self.url = f"http://127.0.0.1:{self.socket.getsockname()[1]}/"

    def reached(self) -> bool:
        # A connection completes in the kernel's accept queue whether or not anyone accepts it.
        return bool(select.select([self.socket], [], [], 0)[0])


@pytest.fixture(scope="module")
def recorder() -> Iterator[Recorder]:
    participant = Recorder()
    participant.thread.start()
    try:
        yield participant
    finally:
        participant.server.shutdown()
        participant.server.server_close()


@pytest.fixture
def trap() -> Iterator[Trap]:
    listener = Trap()
    try:
        yield listener
    finally:
        listener.socket.close()


@pytest.fixture(scope="module")
def purple(mcp_server: McpServer) -> Iterator[ThreadedServer]:
    with ThreadedServer(PurpleSettings(mcp_url=mcp_server.mcp_url)) as server:
        yield server


@pytest.fixture(scope="module")
def green(
    purple: ThreadedServer,
    recorder: Recorder,
    mcp_server: McpServer,
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[ServerProcess]:
    allowed = [purple.url, recorder.url.rstrip("/"), mcp_server.base_url]
    env = {
        "GREEN_AUTH_TOKENS": f"assessor:{CALLER}",
        "GREEN_AGENT_TOKEN": AGENT_TOKEN,
        "GREEN_ALLOWED_ORIGINS": ",".join(allowed),
    }
    log = tmp_path_factory.mktemp("green-trust") / "green.log"
    with ServerProcess.module(
        "services.green_agent", ["serve"], env=env, ready_path="/healthz", log_path=log
    ) as server:
        yield server


def _assess(green: ServerProcess, request: dict[str, Any], token: str | None = CALLER) -> Any:
    """One assessment over A2A 0.3 ``message/send``: the HTTP answer."""
    headers = {"authorization": f"Bearer {token}"} if token else {}
    body = v03_body(json.dumps(request))
    return httpx.post(green.base_url + "/", json=body, headers=headers, timeout=120)


def _task(green: ServerProcess, request: dict[str, Any]) -> dict[str, Any]:
    answer = _assess(green, request)
    assert answer.status_code == 200, answer.text
    task: dict[str, Any] = answer.json()["result"]
    return task


def _status_text(task: dict[str, Any]) -> str:
    return " ".join(p.get("text", "") for p in task["status"]["message"]["parts"])


def _request(participant: str, **config: Any) -> dict[str, Any]:
    return {
        "participants": {"retrieval_agent": participant},
        "config": {"num_queries": 3, "top_k": 5, "random_seed": 42, **config},
    }


def test_without_a_valid_token_the_server_answers_401_but_its_card_and_probes(
    green: ServerProcess, purple: ThreadedServer
) -> None:
    request = _request(purple.url + "/")
    assert _assess(green, request, token=None).status_code == 401
    wrong = _assess(green, request, token="not-the-token-0123456789")
    assert wrong.status_code == 401
    assert (
        wrong.json()["error"]["message"] == "authentication failed: the bearer token is not valid"
    )
    card = httpx.get(
        green.base_url + "/.well-known/agent-card.json", headers={"a2a-version": "1.0"}
    )
    assert card.status_code == 200
    assert card.json()["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "bearer"
    assert httpx.get(green.base_url + "/healthz").status_code == 200
    # No scrape token set: with callers' tokens, /metrics is closed to everyone, callers too.
    for headers in ({}, {"authorization": f"Bearer {CALLER}"}):
        assert httpx.get(green.base_url + "/metrics", headers=headers).status_code == 401


def test_with_the_token_an_assessment_of_an_allowed_participant_completes(
    green: ServerProcess, purple: ThreadedServer, mcp_server: McpServer
) -> None:
    task = _task(green, _request(purple.url + "/", mcp_server_url=mcp_server.mcp_url))
    assert task["status"]["state"] == "completed", task["status"]
    (data,) = [p["data"] for p in task["artifacts"][0]["parts"] if p["kind"] == "data"]
    assert data["successful_communications"] == 3 and data["failed"] == 0


def test_a_participant_outside_the_list_fails_the_assessment_before_any_request(
    green: ServerProcess, trap: Trap
) -> None:
    task = _task(green, _request(trap.url))
    assert task["status"]["state"] == "failed"
    assert _status_text(task).startswith(
        f"participant 'retrieval_agent' {trap.url} is refused: its origin "
        f"{trap.url.rstrip('/')} is not in GREEN_ALLOWED_ORIGINS ("
    )
    assert "artifacts" not in task or not task["artifacts"]
    assert not trap.reached()


def test_an_mcp_server_outside_the_list_fails_the_assessment_before_any_request(
    green: ServerProcess, recorder: Recorder, trap: Trap
) -> None:
    recorder.seen.clear()
    task = _task(green, _request(recorder.url, mcp_server_url=trap.url + "mcp"))
    assert task["status"]["state"] == "failed"
    text = _status_text(task)
    assert text.startswith(f"config.mcp_server_url {trap.url}mcp is refused: its origin ")
    assert "not in GREEN_ALLOWED_ORIGINS" in text
    assert recorder.seen == []  # not even the allowed participant was called
    assert not trap.reached()


@pytest.mark.parametrize("protocol", ["1.0", "0.3"])
def test_the_token_goes_to_the_participant_never_to_the_url_its_card_names(
    green: ServerProcess, recorder: Recorder, trap: Trap, protocol: str
) -> None:
    recorder.seen.clear()
    recorder.redirect_to = None
    recorder.card = agent_card_to_dict(build_card(trap.url))
    task = _task(green, _request(recorder.url, protocol=protocol))
    assert recorder.seen, "the participant was never called"
    assert {auth for _, _, auth in recorder.seen} == {f"Bearer {AGENT_TOKEN}"}
    refused = f"the agent card names {trap.url}: its origin {trap.url.rstrip('/')} is not in"
    if protocol == "1.0":  # the card is read once: the assessment fails on it
        assert task["status"]["state"] == "failed"
        assert refused in _status_text(task)
    else:  # a 0.3 client reads the card before every query: every query fails on it
        (data,) = [p["data"] for p in task["artifacts"][0]["parts"] if p["kind"] == "data"]
        assert data["failed"] == 3 and data["failures_by_reason"] == {"refused": 3}
        assert all(refused in f["message"] for f in data["failures"])
    assert not trap.reached()


def test_a_redirect_is_not_followed(green: ServerProcess, recorder: Recorder, trap: Trap) -> None:
    recorder.seen.clear()
    recorder.redirect_to = trap.url + ".well-known/agent-card.json"
    try:
        task = _task(green, _request(recorder.url))
    finally:
        recorder.redirect_to = None
    assert task["status"]["state"] == "failed"
    assert "307" in _status_text(task)
    assert [method for method, _, _ in recorder.seen] == ["GET"]
    assert not trap.reached()


@pytest.mark.parametrize("path", ["quitquitquit#", "stats/reset#", "stats/reset?", "mcp?x="])
def test_an_mcp_server_url_cannot_pick_the_path_the_evaluator_posts_to(
    green: ServerProcess, purple: ThreadedServer, recorder: Recorder, path: str
) -> None:
    # The recorder's origin is allowed: only the URL's parts stand between it and a POST of
    # /quitquitquit or /stats/reset, which "+ '/health_check'" used to turn into a fragment.
    recorder.seen.clear()
    task = _task(green, _request(purple.url + "/", mcp_server_url=recorder.url + path))
    assert task["status"]["state"] == "failed"
    text = _status_text(task)
    assert text.startswith("invalid assessment request: config.mcp_server_url: ")
    assert ("fragment" if "#" in path else "query") in text
    assert recorder.seen == []


def test_a_participant_url_with_a_query_is_refused_before_its_card_is_fetched(
    green: ServerProcess, recorder: Recorder
) -> None:
    # "?x=" once made the card fetch a GET of the participant's own path, with the token.
    recorder.seen.clear()
    for trailer in ("?x=", "#", "?"):
        task = _task(green, _request(recorder.url + trailer))
        assert task["status"]["state"] == "failed"
        assert "invalid assessment request: participants.retrieval_agent: " in _status_text(task)
    userinfo = recorder.url.replace("http://", "http://someone@")
    task = _task(green, _request(userinfo))
    assert "user information" in _status_text(task)
    assert recorder.seen == []


@pytest.mark.parametrize("protocol", ["1.0", "0.3"])
@pytest.mark.parametrize("trailer", ["?x=", "#"])
def test_a_card_naming_a_url_with_a_query_or_fragment_is_refused(
    green: ServerProcess, recorder: Recorder, protocol: str, trailer: str
) -> None:
    recorder.seen.clear()
    recorder.redirect_to = None
    recorder.card = agent_card_to_dict(build_card(recorder.url + trailer))
    task = _task(green, _request(recorder.url, protocol=protocol))
    assert recorder.seen and all(method == "GET" for method, _, _ in recorder.seen)
    assert {path for _, path, _ in recorder.seen} == {"/.well-known/agent-card.json"}
    refused = f"the agent card names {recorder.url}{trailer}: it has a"
    if protocol == "1.0":
        assert task["status"]["state"] == "failed"
        assert refused in _status_text(task)
    else:
        (data,) = [p["data"] for p in task["artifacts"][0]["parts"] if p["kind"] == "data"]
        assert data["failures_by_reason"] == {"refused": 3}
        assert all(refused in f["message"] for f in data["failures"])


@pytest.mark.parametrize(
    ("allowed", "said"),
    [
        (None, "is not set (loopback, any port)"),
        ("127.0.0.1:*,localhost:*", "lists 127.0.0.1:*, localhost:*"),
        ("*", "lists *"),
    ],
)
def test_serving_beyond_loopback_without_tokens_or_an_exact_list_is_refused_at_start(
    allowed: str | None, said: str
) -> None:
    # Refused before it binds: no server ever listens on every interface here.
    flags = ["--allowed-origins", allowed] if allowed is not None else []
    done = run_green("serve", "--host", "0.0.0.0", "--port", str(free_port()), *flags)
    assert done.returncode == 2, done.stderr
    assert (
        f"error: serving on 0.0.0.0, not a loopback address, lets whoever reaches it send "
        f"assessments, and GREEN_ALLOWED_ORIGINS {said}: set GREEN_AUTH_TOKENS" in done.stderr
    )
