"""How our servers run: uvicorn (``serve``) or gunicorn's worker (:class:`Worker`), both guarded.

uvicorn closes a keep-alive connection that stays idle, but it waits forever for a request head
that never completes: a client that connects and sends nothing, or sends its headers a byte at a
time (slowloris), holds a connection and a file descriptor for as long as it likes.
:class:`GuardedH11Protocol` gives every request head ``header_timeout_s`` to arrive, then closes
the connection. Connections beyond ``max_connections`` get 503 from uvicorn itself.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from types import FrameType
from typing import Any, ClassVar

import h11
import uvicorn
from gunicorn.arbiter import Arbiter
from uvicorn.protocols.http.h11_impl import H11Protocol
from uvicorn_worker import UvicornWorker

from services.common import lifecycle
from services.common.limits import ServerLimits


class GuardedH11Protocol(H11Protocol):
    """h11 with a deadline for each request head (:attr:`header_timeout_s`)."""

    header_timeout_s: ClassVar[float] = ServerLimits().header_timeout_s

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the clock for the first request head."""
        super().connection_made(transport)
        self._head_timer: asyncio.TimerHandle | None = None
        self._watch_head()

    def data_received(self, data: bytes) -> None:
        """Feed h11, then keep the clock running only while a request head is incomplete.

        Between requests the clock is off: an idle keep-alive connection is uvicorn's
        ``timeout_keep_alive`` business; the first byte of the next head starts the clock again.
        """
        super().data_received(data)
        self._watch_head()

    def connection_lost(self, exc: Exception | None) -> None:
        """Stop the clock."""
        self._stop_head_timer()
        super().connection_lost(exc)

    def _watch_head(self) -> None:
        waiting = self.conn.their_state is h11.IDLE and not self.transport.is_closing()
        if not waiting:
            self._stop_head_timer()
        elif self._head_timer is None:
            self._head_timer = self.loop.call_later(self.header_timeout_s, self._head_timed_out)

    def _stop_head_timer(self) -> None:
        timer = getattr(self, "_head_timer", None)
        if timer is not None:
            timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        # Only a connection with no request in progress: a slow response is not the client's.
        if self.conn.their_state is h11.IDLE and (
            self.cycle is None or self.cycle.response_complete
        ):
            self.transport.close()


def protocol_for(limits: ServerLimits) -> type[GuardedH11Protocol]:
    """:class:`GuardedH11Protocol` with the head deadline of ``limits``."""
    return type(
        "GuardedH11Protocol", (GuardedH11Protocol,), {"header_timeout_s": limits.header_timeout_s}
    )


def uvicorn_options(limits: ServerLimits) -> dict[str, Any]:
    """Uvicorn settings every server shares: guarded h11, connection cap, idle timeout, no access log."""
    return {
        "http": protocol_for(limits),
        "limit_concurrency": limits.max_connections,
        "timeout_keep_alive": limits.keep_alive_s,
        "access_log": False,
        # Our logging set-up formats uvicorn's lines like every other line.
        "log_config": None,
    }


class DrainingServer(uvicorn.Server):
    """uvicorn's server with a drain on the first SIGTERM (see :mod:`services.common.lifecycle`).

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
        if sig == signal.SIGTERM and self._drain_s > 0 and not lifecycle.draining():
            lifecycle.begin_drain()
            self._captured_signals.append(sig)  # re-raised after shutdown, as uvicorn does
            timer = threading.Timer(self._drain_s, self._stop)  # uvicorn polls should_exit
            timer.daemon = True
            timer.start()
            return
        super().handle_exit(sig, frame)

    def _stop(self) -> None:
        self.should_exit = True


def serve(app: Any, host: str, port: int, limits: ServerLimits | None = None) -> None:
    """Run ``app`` with uvicorn, the shared options and the SIGTERM drain."""
    limits = limits or ServerLimits()
    config = uvicorn.Config(app, host=host, port=port, **uvicorn_options(limits))
    DrainingServer(config, limits.drain_s).run()


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
