"""A real server (the green agent: the service frame without a model) against hostile clients.

Asserted: what the server does (closes, refuses, keeps alive), with time bounds many times the
configured deadlines, so that only a server that never acts fails, not a slow machine. How fast
it acts is in docs/reliability.md (``make fuzz``, ``make reliability``).
"""

from __future__ import annotations

import select
import socket
import time
from collections.abc import Iterator

import pytest

from harness.processes import ServerProcess

HEAD_TIMEOUT_S = 0.5
PATIENCE_S = 15.0  # how long a test waits for the server to act: 30 head deadlines


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    log = tmp_path_factory.mktemp("logs") / "limits.log"
    # Keep-alive far longer than the head deadline: an idle connection between requests must
    # outlive the head deadline, and a silent one must be closed by the head deadline (within
    # the patience), not by keep-alive.
    env = {"SERVER_HEADER_TIMEOUT_S": str(HEAD_TIMEOUT_S), "SERVER_KEEP_ALIVE_S": "60"}
    process = ServerProcess.module(
        "services.green_agent", ["serve"], env=env, ready_path="/healthz", log_path=log
    )
    with process:
        yield process


def _connect(server: ServerProcess) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port), timeout=PATIENCE_S)
    sock.settimeout(PATIENCE_S)
    return sock


def _closed(sock: socket.socket) -> bool:
    """Whether the server closes the connection within the patience (reading what it sends)."""
    try:
        while sock.recv(65536):
            pass
    except TimeoutError:
        return False
    return True


def _read_until_closed(sock: socket.socket) -> bytes:
    """Everything the server sends before it closes (a reset after its answer included)."""
    answer = b""
    try:
        while chunk := sock.recv(65536):
            answer += chunk
    except ConnectionResetError:  # it closed with our unread upload still in its buffer
        pass
    return answer


def test_a_silent_connection_is_closed_after_the_head_deadline(server: ServerProcess) -> None:
    with _connect(server) as sock:
        assert _closed(sock)  # within 0.5 s here: docs/reliability.md


def _served(sock: socket.socket) -> None:
    """One probe answered on ``sock``."""
    sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
    answer = b""
    while b'{"status":"ok"}' not in answer:
        chunk = sock.recv(65536)
        assert chunk, f"closed after {answer!r}"
        answer += chunk


@pytest.mark.parametrize("after_a_request", [False, True])
def test_a_slowloris_head_is_cut_off_though_bytes_keep_coming(
    server: ServerProcess, after_a_request: bool
) -> None:
    closed_after = None
    with _connect(server) as sock:
        if after_a_request:  # the clock starts again with the next head's first byte
            _served(sock)
            time.sleep(HEAD_TIMEOUT_S * 2)
        sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        started = time.monotonic()
        while time.monotonic() - started < PATIENCE_S:
            try:
                sock.sendall(b"X-Slow: y\r\n")  # a header line every 0.1 s, never the end
                readable = select.select([sock], [], [], 0.1)[0]
                if readable and not sock.recv(65536):
                    closed_after = time.monotonic() - started
                    break
            except OSError:  # reset or broken pipe: closed by the server
                closed_after = time.monotonic() - started
                break
    assert closed_after is not None  # closed while bytes still came: not waiting for the end


def test_keep_alive_serves_several_requests_on_one_connection(server: ServerProcess) -> None:
    with _connect(server) as sock:
        for _ in range(3):
            _served(sock)
            time.sleep(HEAD_TIMEOUT_S * 2)  # idle between requests is keep-alive's business


@pytest.mark.parametrize("chunked", [False, True])
def test_a_100_mb_body_is_refused_before_it_is_read(server: ServerProcess, chunked: bool) -> None:
    framing = b"Transfer-Encoding: chunked" if chunked else b"Content-Length: 100000000"
    chunk = b"x" * 65536
    piece = b"10000\r\n" + chunk + b"\r\n" if chunked else chunk
    sent = 0
    with _connect(server) as sock:
        sock.sendall(b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n")
        sock.sendall(framing + b"\r\n\r\n")
        while sent < 100_000_000 and not select.select([sock], [], [], 0)[0]:
            try:
                sock.sendall(piece)
            except OSError:
                break  # the server answered and closed
            sent += len(chunk)
        answer = _read_until_closed(sock)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert b"over the 65536-byte limit" in answer
    # Refused long before the client was done (no kernel buffer holds half the body); how much
    # was sent and how RSS moved are in the fuzz report (tests/fuzz/test_big_bodies.py).
    assert sent < 50_000_000
