"""``HUNDRED_MB`` bodies against every server: refused with 413 long before they are sent.

How long the refusal took, how much was sent by then and how the server's RSS moved go to the
fuzz report (``make fuzz``), not into assertions: time, socket buffer sizes and resident memory
are figures of the machine. What is asserted is the mechanism: the answer is a 413 that arrives
while most of the body is still unsent (no buffer of the kernel's holds half of it).
"""

from __future__ import annotations

import contextlib
import select
import socket
import time

import pytest

from harness.processes import McpServer, ServerProcess
from tests.fuzz.verdict import Tally

HUNDRED_MB = 100_000_000
CHUNK = b"x" * 65536


def _upload(port: int, path: str, chunked: bool) -> tuple[bytes, int, float]:
    """Send a ``HUNDRED_MB`` body until the server answers; (answer, bytes sent, seconds)."""
    framing = b"Transfer-Encoding: chunked" if chunked else f"Content-Length: {HUNDRED_MB}".encode()
    piece = b"10000\r\n" + CHUNK + b"\r\n" if chunked else CHUNK
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        started = time.perf_counter()
        sock.sendall(f"POST {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n".encode())
        sock.sendall(b"Content-Type: application/json\r\n" + framing + b"\r\n\r\n")
        while sent < HUNDRED_MB and not select.select([sock], [], [], 0)[0]:
            try:
                sock.sendall(piece)
            except OSError:
                break
            sent += len(CHUNK)
        answer = b""
        with contextlib.suppress(ConnectionResetError):
            answer = sock.recv(65536)
        return answer, sent, time.perf_counter() - started


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
@pytest.mark.parametrize("target", ["mcp /search_nfcorpus", "mcp /mcp", "purple /", "green /"])
def test_a_100_mb_body_is_refused_at_once(
    mcp_server: McpServer,
    purple_process: ServerProcess,
    green_process: ServerProcess,
    tally: Tally,
    target: str,
    chunked: bool,
) -> None:
    name, path = target.split()
    server = {"mcp": mcp_server, "purple": purple_process, "green": green_process}[name]
    rss_before = server.rss_kb()
    answer, sent, seconds = _upload(server.port, path, chunked)
    assert answer.startswith(b"HTTP/1.1 413 "), answer[:200]
    assert sent < HUNDRED_MB // 2
    grown_kb = server.rss_kb() - rss_before
    framing = "chunked" if chunked else "content-length"
    tally.note(
        f"100 MB body, {framing}, {target}",
        f"413 after {seconds * 1000:.1f} ms, {sent / 2**20:.1f} MB sent, RSS +{grown_kb} KB",
    )
