"""Connections that promise a request body and never send it (issue 52's idle-body attack)."""

from __future__ import annotations

import contextlib
import socket
from collections.abc import Iterator

from services.common.limits import ServerLimits

#: More idle connections than a process has places for requests.
IDLE = ServerLimits().max_in_flight + 16


def _head(method: str, path: str, port: int, *extra: str) -> bytes:
    lines = [f"{method} {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", *extra, "", ""]
    return "\r\n".join(lines).encode()


@contextlib.contextmanager
def idle_bodies(port: int, method: str, path: str, count: int) -> Iterator[list[socket.socket]]:
    """``count`` connections that each declare a 1000-byte body and send none of it."""
    socks: list[socket.socket] = []
    try:
        for _ in range(count):
            sock = socket.create_connection(("127.0.0.1", port), timeout=5)
            head = _head(
                method, path, port, "Content-Type: application/json", "Content-Length: 1000"
            )
            sock.sendall(head)
            socks.append(sock)
        yield socks
    finally:
        for sock in socks:
            sock.close()
