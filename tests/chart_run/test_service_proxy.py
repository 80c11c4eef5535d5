"""The Service stand-in of `make chart-run` (harness/chart_run/service_proxy.py).

Connections go to the Ready endpoints in turn; a removed endpoint keeps the connections it has;
no endpoint, no connection. The real proxy script runs as a process on loopback in front of two
real HTTP servers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import httpx
import pytest

from harness.chart_run.services import PROXY
from harness.processes import free_port
from tests.support.polling import wait_for


class _Named(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the services answer

    def do_GET(self) -> None:
        body = self.server.name.encode()  # type: ignore[attr-defined]
        self.send_response(200)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def backends() -> Iterator[dict[str, int]]:
    servers = {}
    for name in ("pod-a", "pod-b"):
        server = ThreadingHTTPServer(("127.0.0.1", 0), _Named)
        server.name = name  # type: ignore[attr-defined]
        threading.Thread(target=server.serve_forever, daemon=True).start()
        servers[name] = server
    yield {name: s.server_address[1] for name, s in servers.items()}
    for s in servers.values():
        s.shutdown()
        s.server_close()


class Proxy:
    def __init__(self, folder: Path) -> None:
        self.file = folder / "endpoints.json"
        self.port = free_port()
        self.publish({})
        command = [
            sys.executable,
            str(PROXY),
            "--endpoints",
            str(self.file),
            "--port",
            str(self.port),
        ]
        self.process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self.process.stdout is not None
        assert json.loads(self.process.stdout.readline())["event"] == "listening"

    def publish(self, pods: dict[str, int]) -> None:
        # As the runner does: written aside, renamed into place.
        listed = {
            str(self.port): [["127.0.0.1", port, name] for name, port in sorted(pods.items())]
        }
        aside = self.file.with_suffix(".new")
        aside.write_text(json.dumps(listed))
        os.replace(aside, self.file)

    def events(self) -> list[dict[str, object]]:
        self.process.terminate()
        out, _ = self.process.communicate(timeout=10)
        return [json.loads(line) for line in out.splitlines()]

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}/"


@pytest.fixture
def proxy(tmp_path: Path) -> Iterator[Proxy]:
    p = Proxy(tmp_path)
    yield p
    p.process.kill()
    p.process.communicate()  # reaps it and closes its stdout


def _fresh(url: str) -> str:
    """One request on a new connection."""
    with httpx.Client() as http:
        return http.get(url).text


def test_new_connections_take_the_ready_endpoints_in_turn(
    proxy: Proxy, backends: dict[str, int]
) -> None:
    proxy.publish(backends)
    assert [_fresh(proxy.url) for _ in range(4)] == ["pod-a", "pod-b", "pod-a", "pod-b"]
    events = proxy.events()
    assert [e["pod"] for e in events if e["event"] == "connected"] == ["pod-a", "pod-b"] * 2


def test_a_removed_endpoint_keeps_its_connections_but_gets_no_new_one(
    proxy: Proxy, backends: dict[str, int]
) -> None:
    proxy.publish({"pod-a": backends["pod-a"]})
    with httpx.Client() as kept:
        assert kept.get(proxy.url).text == "pod-a"
        proxy.publish({"pod-b": backends["pod-b"]})  # pod-a terminating: out of the endpoints
        # The open connection still reaches pod-a (it drains); new connections reach pod-b.
        assert [kept.get(proxy.url).text for _ in range(3)] == ["pod-a"] * 3
        assert [_fresh(proxy.url) for _ in range(2)] == ["pod-b"] * 2


def test_no_ready_endpoint_refuses_the_connection(proxy: Proxy, backends: dict[str, int]) -> None:
    with pytest.raises(httpx.TransportError):
        _fresh(proxy.url)
    # An endpoint that does not accept (its process gone) is refused too, and said so.
    proxy.publish({"pod-gone": free_port()})
    with pytest.raises(httpx.TransportError):
        _fresh(proxy.url)
    proxy.publish(backends)
    wait_for(lambda: _fresh(proxy.url) in backends, timeout_s=10, what="an answer once ready")
    refused = [e for e in proxy.events() if e["event"] == "refused"]
    assert [e.get("pod") for e in refused] == [None, "pod-gone"]
    assert refused[0]["reason"] == "no ready endpoint"
