"""``/metrics`` on a port of its own (``SERVER_METRICS_PORT``, :class:`ServerLimits`).

A NetworkPolicy opens ports, not paths. While ``/metrics`` shares the API port, the rule that
lets Prometheus scrape a pod also lets the Prometheus namespace call every route of it (``/mcp``,
``/stats/reset``, the A2A endpoint). With a metrics port the server listens on both ports
(:func:`services.common.server.serve`; under gunicorn, :func:`with_metrics_binds` in its
``on_starting`` hook), and :class:`MetricsPort` routes each request by the port it arrived on:
there only ``/metrics`` is served, and on the API port ``/metrics`` is not. The probes stay on
the API port, where the kubelet sends them. Without a metrics port nothing changes.
"""

from __future__ import annotations

from collections.abc import Iterable

from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from services.common.limits import ServerLimits
from services.common.paths import METRICS


class MetricsPort:
    """ASGI middleware: ``/metrics`` on the metrics port only, everything else off it (404).

    The port a request arrived on is the ASGI scope's ``server`` address: the local end of its
    connection, so neither the client nor a proxy in front can choose it with a header.
    """

    def __init__(self, app: ASGIApp, limits: ServerLimits | None = None) -> None:
        """Wrap ``app``; the metrics port is ``limits.metrics_port`` (None: pass everything)."""
        self._app = app
        self._port = (limits or ServerLimits()).metrics_port

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Refuse a request on the wrong port with the 404 of an unknown path; pass the rest."""
        if self._port is not None and scope["type"] == "http":
            server = scope.get("server")
            on_metrics_port = server is not None and server[1] == self._port
            if on_metrics_port != (scope["path"] == METRICS):
                # The same answer as any path the server does not have: nothing to probe.
                await PlainTextResponse("Not Found", status_code=404)(scope, receive, send)
                return
        await self._app(scope, receive, send)


def with_metrics_binds(binds: Iterable[str], metrics_port: int | None) -> list[str]:
    """The ``bind`` list of gunicorn with the metrics port beside each host the API binds.

    ``0.0.0.0:9009`` gains ``0.0.0.0:9090`` (for ``metrics_port`` 9090); a Unix socket gains
    nothing (it has no port to split by).

    Raises:
        ValueError: the metrics port is one the API binds.

    """
    listed = list(binds)
    if metrics_port is None:
        return listed
    added: list[str] = []
    for bind in listed:
        if bind.startswith(("unix:", "fd://")):
            continue
        host, sep, port = bind.rpartition(":")
        if not sep or not port.isdigit():
            continue
        if int(port) == metrics_port:
            raise ValueError(
                f"SERVER_METRICS_PORT={metrics_port} is the API's port ({bind}): "
                "the metrics port must be a port of its own"
            )
        if f"{host}:{metrics_port}" not in added:
            added.append(f"{host}:{metrics_port}")
    return [*listed, *added]
