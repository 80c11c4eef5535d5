"""Ports known closed by construction, for tests of what a client does when nobody listens.

A well-known port (9, discard; 1, tcpmux) is closed only by custom: any machine may serve it. A
socket this process has bound and never listens on is closed by construction: the kernel answers
a connection to it with a reset at once, and nobody else can bind it while the socket is held.
"""

from __future__ import annotations

import socket
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def closed_port() -> Iterator[int]:
    """A loopback port that refuses every connection while the block runs."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        yield int(sock.getsockname()[1])


@contextmanager
def closed_url(path: str = "/") -> Iterator[str]:
    """``http://127.0.0.1:<closed port><path>``, refusing connections while the block runs."""
    with closed_port() as port:
        yield f"http://127.0.0.1:{port}{path}"
