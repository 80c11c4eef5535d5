"""Probes as the kubelet counts them, and one real HTTP probe per outcome."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from harness.chart_run.kubelet import ProbeTally, http_probe
from harness.chart_run.spec import Probe
from harness.processes import free_port


def _probe(path: str = "/readyz", port: int = 0, failures: int = 3, successes: int = 1) -> Probe:
    return Probe(path, port, 5.0, 2.0, failures, successes, 0.0)


def test_readiness_turns_on_at_the_first_pass_and_off_after_the_threshold() -> None:
    tally = ProbeTally(_probe(failures=3), passing=False)
    assert [tally.record(ok) for ok in (False, False, True)] == [False, False, True]
    assert tally.passing
    # Two failures in a row are not enough; a pass in between starts the count again.
    assert [tally.record(ok) for ok in (False, False, True, False, False)] == [False] * 5
    assert tally.passing
    assert tally.record(False) is True and not tally.passing and tally.exhausted


def test_success_threshold_needs_passes_in_a_row() -> None:
    tally = ProbeTally(_probe(successes=2), passing=False)
    assert [tally.record(ok) for ok in (True, False, True, True)] == [False, False, False, True]


def test_liveness_starts_passing_and_is_exhausted_by_its_threshold() -> None:
    tally = ProbeTally(_probe(failures=2), passing=True)
    tally.record(False)
    assert not tally.exhausted
    tally.record(False)
    assert tally.exhausted and not tally.passing


class _Probed(BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        status = {"/healthz": 200, "/moved": 302, "/readyz": 503}.get(self.path, 404)
        self.send_response(status)
        self.send_header("Content-Length", "7")
        self.end_headers()
        self.wfile.write(b"not yet")

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def server() -> Iterator[int]:
    s = ThreadingHTTPServer(("127.0.0.1", 0), _Probed)
    threading.Thread(target=s.serve_forever, daemon=True).start()
    yield s.server_address[1]
    s.shutdown()
    s.server_close()


async def test_http_probe_passes_on_2xx_and_3xx_only(server: int) -> None:
    async with httpx.AsyncClient() as client:
        assert await http_probe(client, "127.0.0.1", _probe("/healthz", server)) is None
        assert await http_probe(client, "127.0.0.1", _probe("/moved", server)) is None
        failed = await http_probe(client, "127.0.0.1", _probe("/readyz", server))
        assert failed == "GET /readyz: HTTP 503 not yet"
        refused = await http_probe(client, "127.0.0.1", _probe("/healthz", free_port()))
        assert refused is not None and refused.startswith("GET /healthz: ConnectError")
