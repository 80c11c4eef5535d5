"""How our servers run: uvicorn (``serve``) or gunicorn's worker (:class:`Worker`), guarded, drained.

uvicorn closes a keep-alive connection that stays idle, but it waits forever for a request head
that never completes: a client that connects and sends nothing, or sends its headers a byte at a
time (slowloris), holds a connection and a file descriptor for as long as it likes.
:class:`GuardedHttpToolsProtocol` gives every request head ``header_timeout_s`` to arrive, then
closes the connection. Connections beyond ``max_connections`` get 503 from uvicorn itself.

Requests are parsed by httptools (llhttp, in C) rather than h11 (pure Python): measured as a pair
on the A2A path, both servers on it cost less CPU per query at 16 in flight, in every round
(docs/performance.md has the figures).

On SIGTERM a server first drains (:class:`DrainingServer`, also under gunicorn): ``/readyz``
answers 503 so a load balancer stops sending new requests, while requests in flight and those
already on their way are still served, each answer saying ``Connection: close``
(:class:`CloseWhileDraining`); then the server stops. Whether the process drains is set once
(:func:`begin_drain`) and read by readiness and by every response (:func:`draining`).

Why the close: a Service moves new connections away from a terminating pod, but a client's
pooled keep-alive connections stay with it. When the server stops it closes the idle ones, and a
request the client sends on one at that moment is lost ("Server disconnected without sending a
response"; ``make chart-run`` met it in a rolling restart). Closing each connection after its
next answer moves the busy clients to other pods during the drain; the connections still open
when it ends have been idle for the whole drain, longer than clients keep an idle connection
(httpx: 5 s), so none is reused as it closes.

The app is built in the process that serves it, after what can be shared was loaded before the
fork: gunicorn's ``preload_app`` imports the ASGI module once, in the master, and forks the
workers from it, so whatever the module loaded by then (imported packages, a model's weights) is
shared copy-on-write by every worker instead of loaded again by each. Some parts must not cross a
fork (an embedded Qdrant shard's file locks and threads, event-loop objects), so the module
exports a :class:`BuiltInWorker`, which builds the real app at its first ASGI event: the lifespan
start-up in the worker. Without gunicorn (uvicorn, tests) the same object simply builds on
start-up.
"""

from __future__ import annotations

import asyncio
import copy
import gc
import signal
import socket
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any, ClassVar

import uvicorn
from gunicorn.arbiter import Arbiter
from starlette.types import ASGIApp, Message, Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol
from uvicorn_worker import UvicornWorker

from services.common.limits import ServerLimits


class GuardedHttpToolsProtocol(HttpToolsProtocol):
    """httptools with a deadline for each request head (:attr:`header_timeout_s`).

    The clock runs from the connection until the first head is complete, and again from the
    first byte of each later head (the parser's message begin) until it is complete. Between
    requests it is off: an idle keep-alive connection is uvicorn's ``timeout_keep_alive``
    business.
    """

    header_timeout_s: ClassVar[float] = ServerLimits().header_timeout_s

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the clock for the first request head."""
        self._head_timer: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._start_head_clock()

    def on_message_begin(self) -> None:
        """A head starts: the clock runs (already, for a connection's first)."""
        super().on_message_begin()
        self._start_head_clock()

    def on_headers_complete(self) -> None:
        """The head is complete: stop the clock, then hand the request on."""
        self._stop_head_clock()
        super().on_headers_complete()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the clock."""
        self._stop_head_clock()
        super().connection_lost(exc)

    def _start_head_clock(self) -> None:
        if self._head_timer is None and not self.transport.is_closing():
            self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_timed_out)

    def _stop_head_clock(self) -> None:
        timer = getattr(self, "_head_timer", None)
        if timer is not None:
            timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        # A pipelined head behind a response still being written: a slow response is not the
        # client's doing, so the head gets another period once that is the only thing left.
        if self.cycle is not None and not self.cycle.response_complete:
            self._start_head_clock()
            return
        self.transport.close()


def protocol_for(limits: ServerLimits) -> type[GuardedHttpToolsProtocol]:
    """:class:`GuardedHttpToolsProtocol` with the head deadline of ``limits``."""
    return type(
        "GuardedHttpToolsProtocol",
        (GuardedHttpToolsProtocol,),
        {"header_timeout_s": limits.header_timeout_s},
    )


def uvicorn_options(limits: ServerLimits) -> dict[str, Any]:
    """Uvicorn settings every server shares: guarded httptools, connection cap, idle timeout."""
    return {
        "http": protocol_for(limits),
        "limit_concurrency": limits.max_connections,
        "timeout_keep_alive": limits.keep_alive_s,
        "access_log": False,
        # Our logging set-up formats uvicorn's lines like every other line.
        "log_config": None,
    }


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


class DrainingServer(uvicorn.Server):
    """uvicorn's server with a drain on the first SIGTERM (see the module docstring).

    For ``drain_s`` the server keeps serving while ``/readyz`` fails, then it stops as uvicorn
    does: no new connections, requests in flight finished. A second SIGTERM, or Ctrl-C, stops
    at once.
    """

    def __init__(self, config: uvicorn.Config, drain_s: float) -> None:
        """Serve ``config``; drain for ``drain_s`` on SIGTERM (0: stop at once)."""
        super().__init__(config)
        self._drain_s = drain_s

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """Drain on the first SIGTERM; anything else as uvicorn does."""
        if sig == signal.SIGTERM and self._drain_s > 0 and not draining():
            begin_drain()
            self._captured_signals.append(sig)  # re-raised after shutdown, as uvicorn does
            timer = threading.Timer(self._drain_s, self._stop)  # uvicorn polls should_exit
            timer.daemon = True
            timer.start()
            return
        super().handle_exit(sig, frame)

    def _stop(self) -> None:
        self.should_exit = True


def serve(app: Any, host: str, port: int, limits: ServerLimits | None = None) -> None:
    """Run ``app`` with uvicorn, the shared options and the SIGTERM drain.

    With ``limits.metrics_port`` the server also listens on that port of ``host``, for
    ``/metrics`` alone (:mod:`services.common.metrics_port`).
    """
    limits = limits or ServerLimits()
    config = uvicorn.Config(app, host=host, port=port, **uvicorn_options(limits))
    DrainingServer(config, limits.drain_s).run(sockets=_listening_sockets(config, limits))


def _listening_sockets(config: uvicorn.Config, limits: ServerLimits) -> list[socket.socket] | None:
    """The API's socket and the metrics port's, bound; None (uvicorn binds) without one."""
    if limits.metrics_port is None:
        return None
    if limits.metrics_port == config.port:
        raise SystemExit(
            f"SERVER_METRICS_PORT={limits.metrics_port} is the API's port: "
            "the metrics port must be a port of its own"
        )
    metrics = copy.copy(config)
    metrics.port = limits.metrics_port
    return [config.bind_socket(), metrics.bind_socket()]


class Worker(UvicornWorker):  # type: ignore[misc]  # untyped base
    """gunicorn's uvicorn worker with the same guard and drain (``-k services.common.server.Worker``).

    gunicorn's own ``keepalive`` and ``timeout`` settings still apply on top. On SIGTERM (gunicorn
    relays the pod's to every worker) the worker drains for ``SERVER_DRAIN_S`` as
    :class:`DrainingServer` does, so a pod's keep-alive clients move away before it stops; its
    ``graceful_timeout`` must cover the drain and the longest request.
    """

    CONFIG_KWARGS: ClassVar[dict[str, Any]] = {
        **UvicornWorker.CONFIG_KWARGS,
        **{k: v for k, v in uvicorn_options(ServerLimits()).items() if k != "timeout_keep_alive"},
    }

    async def _serve(self) -> None:
        # uvicorn_worker's own _serve (0.4), with the draining server in place of uvicorn's.
        self.config.app = self.wsgi
        server = DrainingServer(config=self.config, drain_s=ServerLimits().drain_s)
        self._install_sigquit_handler()
        await server.serve(sockets=self.sockets)
        if not server.started:
            sys.exit(Arbiter.WORKER_BOOT_ERROR)


class BuiltInWorker:
    """An ASGI app that calls ``build`` on its first event and then hands every event to it."""

    def __init__(self, build: Callable[[], ASGIApp]) -> None:
        """Remember how to build the app; nothing is built here (this may be the master)."""
        self._build = build
        self._app: ASGIApp | None = None
        self._lock = threading.Lock()

    @property
    def built(self) -> bool:
        """Whether this process has built its app."""
        return self._app is not None

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Serve one ASGI event, building the app first if this process has none yet."""
        if self._app is None:
            with self._lock:  # one build, even if two events raced to start it
                if self._app is None:
                    self._app = self._build()
                    freeze_shared_objects()  # the app's tables live as long as the process
        await self._app(scope, receive, send)


def freeze_shared_objects() -> None:
    """Keep the objects loaded so far out of the garbage collector's passes.

    A collection writes to every object it visits, which would copy each preloaded page into
    every worker that runs one: frozen, they stay shared. And a full collection over a million
    start-up objects (packages, model, index tables) stalls every request in flight for tens of
    milliseconds; frozen, they are never scanned again.
    """
    gc.collect()
    gc.freeze()
