"""The frame's doors under the attacks a review found (issue 52, inputs 1 and 4), on real servers.

1. Idle bodies: connections that promise a body and never send it, whatever their method, hold
   no place a search needs: ``POST /search_nfcorpus`` is still answered while they stay open.
4. Host and Origin: a DNS-rebinding page (a foreign ``Host``, and its own ``Origin``) reaches none
   of our servers, the purple agent, the green agent and the load collector included.
"""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.processes import McpServer, ServerProcess
from services.common.limits import ServerLimits
from services.purple_agent.settings import PurpleSettings
from tests.support.idle_bodies import IDLE, idle_bodies
from tests.support.purple import ThreadedServer, v03_body

REBOUND = "rebind.attacker.example"


def _status(sock: socket.socket) -> int:
    answer = b""
    while b"\r\n" not in answer:
        chunk = sock.recv(4096)
        assert chunk, f"closed after {answer!r}"
        answer += chunk
    return int(answer.split(b" ", 2)[1])


@pytest.mark.parametrize(
    ("method", "path"),
    [("DELETE", "/mcp"), ("PUT", "/mcp"), ("POST", "/search_nfcorpus"), ("DELETE", "/nowhere")],
)
def test_idle_bodies_of_any_method_leave_searches_answered(
    mcp_server: McpServer, method: str, path: str
) -> None:
    search = {"query": "soy and hot flashes", "top_k": 3}
    with idle_bodies(mcp_server.port, method, path, IDLE) as socks:
        # Answered as usual, not 503 overloaded: the idle bodies took no place.
        for _ in range(3):
            answer = httpx.post(mcp_server.base_url + "/search_nfcorpus", json=search, timeout=5)
            assert answer.status_code == 200, answer.text
            assert len(answer.json()["results"]) == 3
        if path == "/mcp":  # a method /mcp does not serve: 405 from the head, no body awaited
            assert {_status(sock) for sock in socks} == {405}


def test_a_body_of_any_method_is_bounded_in_size(mcp_server: McpServer) -> None:
    limit = ServerLimits().max_body_bytes
    for method in ("DELETE", "GET", "OPTIONS"):
        answer = httpx.request(
            method, mcp_server.base_url + "/nowhere", content=b"x" * (limit + 1), timeout=5
        )
        assert answer.status_code == 413, (method, answer.text)
    # The SDK's own limit is the frame's: nothing larger reaches the MCP mount.
    big = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"x": "y" * limit}}
    answer = httpx.post(mcp_server.mcp_url, json=big, timeout=5)
    assert answer.status_code == 413


def _rebinding(port: int) -> dict[str, str]:
    """What a page at ``rebind.attacker.example`` whose name now resolves to us sends."""
    return {"host": f"{REBOUND}:{port}", "origin": f"http://{REBOUND}:{port}"}


def test_the_purple_agent_answers_only_its_own_names(mcp_server: McpServer) -> None:
    card_url = "http://purple.example:9009/"  # the name a Service or a gateway gives it
    settings = PurpleSettings(mcp_url=mcp_server.mcp_url, card_url=card_url)
    body = v03_body(json.dumps({"query": "vitamin d", "top_k": 2}))
    with ThreadedServer(settings) as purple:
        rebound = httpx.post(purple.url + "/", json=body, headers=_rebinding(purple.port))
        assert rebound.status_code == 421
        assert rebound.json()["error"]["message"].startswith("invalid request: this server is")
        crossed = httpx.post(purple.url + "/", json=body, headers={"origin": f"http://{REBOUND}"})
        assert crossed.status_code == 403
        # Its loopback names and the card URL's host are its own; probes need no name.
        for host in (f"127.0.0.1:{purple.port}", "purple.example:9009"):
            own = httpx.post(purple.url + "/", json=body, headers={"host": host})
            assert own.status_code == 200 and own.json()["result"]["status"]["state"] == "completed"
        probe = httpx.get(purple.url + "/healthz", headers={"host": "10.1.2.3:9009"})
        assert probe.status_code == 200


@pytest.fixture
def trap() -> Iterator[socket.socket]:
    """A listening socket no request may ever reach."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(8)
    sock.setblocking(False)
    yield sock
    sock.close()


def _reached(trap: socket.socket) -> bool:
    try:
        trap.accept()[0].close()
    except BlockingIOError:
        return False
    return True


def test_the_green_agent_runs_no_assessment_for_a_rebinding_page(
    tmp_path: Path, trap: socket.socket
) -> None:
    participant = f"http://127.0.0.1:{trap.getsockname()[1]}/"
    request = {"participants": {"retrieval_agent": participant}, "config": {"num_queries": 1}}
    body = v03_body(json.dumps(request))
    log = tmp_path / "green.log"
    with ServerProcess.module(
        "services.green_agent", ["serve"], ready_path="/healthz", log_path=log
    ) as green:
        answer = httpx.post(green.base_url + "/", json=body, headers=_rebinding(green.port))
        assert answer.status_code == 421
        crossed = httpx.post(green.base_url + "/", json=body, headers={"origin": "null"})
        assert crossed.status_code == 403
        assert not _reached(trap)


def test_the_load_collector_takes_no_report_from_a_rebinding_page(tmp_path: Path) -> None:
    log = tmp_path / "collector.log"
    with ServerProcess.module(
        "services.green_agent",
        ["load-collect", "--workers", "1"],
        ready_path="/healthz",
        log_path=log,
    ) as collector:
        answer = httpx.post(
            collector.base_url + "/reports", json={}, headers=_rebinding(collector.port)
        )
        assert answer.status_code == 421
        page = httpx.get(collector.base_url + "/report", headers=_rebinding(collector.port))
        assert page.status_code == 421
        # Its own name is served (404: no report yet).
        assert httpx.get(collector.base_url + "/report").status_code == 404
