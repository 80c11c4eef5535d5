"""Whether this process is shutting down: set once, read by readiness and by every response.

On SIGTERM a server first drains (:class:`services.common.server.DrainingServer`, also under
gunicorn): ``/readyz`` answers 503 so a load balancer stops sending new requests, while requests
in flight and those already on their way are still served, each answer saying
``Connection: close`` (:class:`CloseWhileDraining`); then the server stops.

Why the close: a Service moves new connections away from a terminating pod, but a client's
pooled keep-alive connections stay with it. When the server stops it closes the idle ones, and a
request the client sends on one at that moment is lost ("Server disconnected without sending a
response"; ``make chart-run`` met it in a rolling restart). Closing each connection after its
next answer moves the busy clients to other pods during the drain; the connections still open
when it ends have been idle for the whole drain, longer than clients keep an idle connection
(httpx: 5 s), so none is reused as it closes.
"""

from __future__ import annotations

import threading

from starlette.types import ASGIApp, Message, Receive, Scope, Send

_draining = threading.Event()


def begin_drain() -> None:
    """Mark the process as shutting down (readiness fails from now on)."""
    _draining.set()


def draining() -> bool:
    """Whether the process is shutting down."""
    return _draining.is_set()


class CloseWhileDraining:
    """ASGI middleware: while the process drains, every response closes its connection."""

    def __init__(self, app: ASGIApp) -> None:
        """Wrap ``app``."""
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; mark its response ``Connection: close`` if draining."""
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return

        async def send_closing(message: Message) -> None:
            if message["type"] == "http.response.start" and _draining.is_set():
                kept = [(k, v) for k, v in message.get("headers", []) if k.lower() != b"connection"]
                message = {**message, "headers": [*kept, (b"connection", b"close")]}
            await send(message)

        await self._app(scope, receive, send_closing)
