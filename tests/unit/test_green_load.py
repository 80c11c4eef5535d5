"""Load-mode arguments and the load report."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from services.green_agent.evaluation.client import (
    CARD_PATH,
    TransportFailure,
    wait_for_agent,
)
from services.green_agent.evaluation.evaluator import QueryOutcome
from tests.support.load_reports import report_of
from tests.support.ports import closed_url


def test_report_counts_errors_and_times_successes_only() -> None:
    outcomes = [
        QueryOutcome("q1", 0.010, ["MED-1"]),
        QueryOutcome("q2", 0.030, ["MED-2"]),
        QueryOutcome("q3", 5.000, None, "timeout", "no reply in time"),
        QueryOutcome("q4", 4.000, None, "timeout", "no reply in time"),
    ]
    report = report_of(
        outcomes,
        dropped=3,
        wall_s=2.0,
        agent="http://a",
        protocol="1.0",
        duration_s=2.0,
        concurrency=None,
        rate=10.0,
    )
    assert (report.requests, report.ok, report.errors, report.dropped) == (4, 2, 2, 3)
    assert report.loop == "open"
    assert report.throughput_rps == pytest.approx(1.0)
    assert report.latency.max_s == pytest.approx(0.030)
    assert report.errors_by_reason == {"timeout": 2}
    assert report.error_samples == ["timeout: no reply in time"]


async def test_a_generator_waits_for_an_agent_that_comes_up_late() -> None:
    # Bound from the start (connections refused: nobody listens), listening after 1.5 s.
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = int(sock.getsockname()[1])
    card = json.dumps({"name": "late"}).encode()

    class Card(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            status = 200 if self.path == CARD_PATH else 404
            self.send_response(status)
            self.end_headers()
            self.wfile.write(card)

        def log_message(self, *_: object) -> None:
            pass

    server: ThreadingHTTPServer | None = None

    def start() -> None:
        nonlocal server
        server = ThreadingHTTPServer(("127.0.0.1", port), Card, bind_and_activate=False)
        server.socket.close()
        server.socket = sock
        server.server_activate()
        threading.Thread(target=server.serve_forever, daemon=True).start()

    timer = threading.Timer(1.5, start)
    timer.start()
    try:
        await wait_for_agent(f"http://127.0.0.1:{port}/", 30)
        assert server is not None  # it returned once the card answered, not before
    finally:
        timer.join()
        if server is not None:
            server.shutdown()
        sock.close()


async def test_a_generator_gives_up_on_an_agent_that_never_answers() -> None:
    with (
        closed_url("") as nobody,
        pytest.raises(TransportFailure, match=r"no agent card at .* after 0\.5 s: Connect"),
    ):
        await wait_for_agent(nobody, 0.5)
