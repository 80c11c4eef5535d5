"""Whether this process is shutting down: set once, read by readiness.

On SIGTERM a server first drains (:func:`services.common.server.serve`): ``/readyz`` answers 503
so a load balancer stops sending new requests, while requests in flight and those already on
their way are still served; then the server stops.
"""

from __future__ import annotations

import threading

_draining = threading.Event()


def begin_drain() -> None:
    """Mark the process as shutting down (readiness fails from now on)."""
    _draining.set()


def draining() -> bool:
    """Whether the process is shutting down."""
    return _draining.is_set()
