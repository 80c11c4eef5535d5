"""The app factory every server composes.

A server hands over its own routes; the frame adds ``GET /healthz`` (the process is alive),
``GET /readyz`` (when the server has a readiness check; 503 with the reason otherwise),
``GET /metrics`` (Prometheus; with authentication on, only for the scrape token) and, around
every request, a latency sample by route, outcome and caller
(``<prefix>_http_request_duration_seconds``; refusals also in ``<prefix>_http_auth_failures_total``),
a server span parented on the caller's W3C trace context, bearer-token authentication when the
server has tokens (:mod:`services.common.auth`), the guards (:mod:`services.common.guard`: Host and
Origin, methods, content type, body size and time, JSON nesting and text, the JSON-RPC envelope,
overload) and, while the process drains,
``Connection: close`` on every answer
(:mod:`services.common.server`, which runs the app), all of it reading header values trimmed as
RFC 9110 defines them (:mod:`services.common.header_values`). Anything every server should do per request
is added here, once.

``/readyz`` answers from a short-lived cache (:class:`CachedCheck`): each kubelet probes every
few seconds, and several pods may be probed at once; without it, every probe would become a
store query or an MCP request.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Collection, Iterable, Mapping, Sequence
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Mount, Route

from services.common.auth import BearerAuth, one_token_per_purpose
from services.common.guard.admission import Admission
from services.common.guard.body import BoundedBody
from services.common.guard.content_type import JsonContentType
from services.common.guard.envelope import BodyCheck, JsonRpcEnvelope
from services.common.guard.hosts import LOOPBACK_HOSTS, HostRules, TrustedHosts
from services.common.guard.methods import AllowedMethods, route_methods
from services.common.header_values import TrimmedHeaderValues
from services.common.limits import ServerLimits
from services.common.metrics_port import MetricsPort
from services.common.paths import FRAME_PATHS, HEALTHZ, METRICS, READYZ
from services.common.server import CloseWhileDraining, draining
from services.telemetry.http import RequestTelemetry
from services.telemetry.metrics import http_auth_failures, http_request_histogram, metrics_endpoint
from services.telemetry.tracing import setup_tracing

Lifespan = Callable[[Starlette], AbstractAsyncContextManager[None]]
#: A readiness check: ``(ready, explanation)``.
Check = Callable[[], Awaitable[tuple[bool, str]]]
_log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class ServiceId:
    """How a server names itself: its metric prefix and its OpenTelemetry service name."""

    metric_prefix: str
    trace_name: str


@dataclass(frozen=True, slots=True)
class Readiness:
    """What ``/readyz`` runs (cached for ``cache_s``) and the key its explanation is served under."""

    check: Check
    cache_s: float
    detail_key: str = "reason"


class CachedCheck:
    """Runs ``check`` at most once per ``cache_s``; calls in between get its last answer."""

    def __init__(self, check: Check, cache_s: float) -> None:
        """Wrap ``check``, which returns ``(ready, explanation)``."""
        self._check = check
        self._cache_s = cache_s
        self._checked_at: float | None = None
        self._last: tuple[bool, str] = (False, "not checked yet")

    async def __call__(self) -> tuple[bool, str]:
        """Whether the service is ready, and why (or why not)."""
        now = time.monotonic()
        if self._checked_at is None or now - self._checked_at >= self._cache_s:
            self._last = await self._check()
            self._checked_at = now
        return self._last


async def _healthz(_: Request) -> Response:
    return JSONResponse({"status": "ok"})


def _readyz(readiness: Readiness) -> Callable[[Request], Awaitable[Response]]:
    cached = CachedCheck(readiness.check, readiness.cache_s)

    async def readyz(_: Request) -> Response:
        ready, detail = (False, "draining: shutting down") if draining() else await cached()
        body = {"status": "ready" if ready else "not ready", readiness.detail_key: detail}
        return JSONResponse(body, status_code=200 if ready else 503)

    return readyz


def route_paths(routes: Iterable[BaseRoute]) -> set[str]:
    """Every path the routes serve (mounted apps included): the latency metric's route labels."""
    paths: set[str] = set()
    for route in routes:
        if isinstance(route, Mount):
            paths |= {route.path + p for p in route_paths(route.routes)}
        elif isinstance(route, Route):
            paths.add(route.path)
    return paths


def service_app(
    service: ServiceId,
    routes: Sequence[BaseRoute],
    *,
    readiness: Readiness | None = None,
    lifespan: Lifespan | None = None,
    jsonrpc_paths: Collection[str] = (),
    body_checks: Mapping[str, BodyCheck] | None = None,
    limits: ServerLimits | None = None,
    tokens: Mapping[str, str] | None = None,
    public_get_paths: Collection[str] = (),
    metrics_tokens: Mapping[str, str] | None = None,
    json_paths: Collection[str] = (),
    allowed_hosts: Collection[str] | None = None,
    methods: Mapping[str, Collection[str]] | None = None,
) -> Starlette:
    """The server's routes inside the frame (see the module docstring).

    ``jsonrpc_paths`` are answered with JSON-RPC errors when the guard refuses a request there;
    ``body_checks`` add a protocol's rules for the JSON bodies of one path; posts to
    ``json_paths`` (as to ``jsonrpc_paths``) take only ``application/json``. With ``tokens``
    (token -> caller name) every request needs one, but for probes and GETs of
    ``public_get_paths``; ``/metrics`` needs one of ``metrics_tokens`` (the scrape token) when
    either is given, but when it is one of ``public_get_paths`` and no scrape token is given
    (:mod:`services.common.auth`). Requests must name one of ``allowed_hosts``
    (default: the loopback names on any port) in ``Host`` and ``Origin``
    (:mod:`services.common.guard.hosts`). ``methods`` names the methods of paths that a mounted
    app serves (the routes' own methods are read from them): others get 405 before the mount.

    Raises:
        TokenError: a scrape token is also a caller's token.

    """
    one_token_per_purpose(tokens or {}, metrics_tokens or {})
    if tokens and not metrics_tokens and METRICS not in public_get_paths:
        _log.warning("authentication is on and no scrape token is set: /metrics answers 401")
    setup_tracing(service.trace_name)
    frame: list[BaseRoute] = [
        Route(HEALTHZ, _healthz, methods=["GET"]),
        Route(METRICS, metrics_endpoint, methods=["GET"]),
    ]
    if readiness is not None:
        frame.append(Route(READYZ, _readyz(readiness), methods=["GET"]))
    # The frame's routes first: a server may mount an app that catches every other path.
    every_route = [*frame, *routes]
    app = Starlette(routes=every_route, lifespan=lifespan)
    limits = limits or ServerLimits()
    # Added innermost first. Admission last of the guards: a request takes a place once its body
    # is in and well-formed, so clients slow to send (or sending nonsense) turn nobody away.
    app.add_middleware(Admission, limits=limits, jsonrpc_paths=jsonrpc_paths)
    app.add_middleware(JsonRpcEnvelope, jsonrpc_paths=jsonrpc_paths, body_checks=body_checks)
    app.add_middleware(BoundedBody, limits=limits, jsonrpc_paths=jsonrpc_paths)
    app.add_middleware(JsonContentType, jsonrpc_paths=jsonrpc_paths, json_paths=json_paths)
    served = route_methods(every_route) | {p: frozenset(m) for p, m in (methods or {}).items()}
    app.add_middleware(AllowedMethods, methods=served, jsonrpc_paths=jsonrpc_paths)
    # Outside the guards: a request without a token takes no slot and no body read.
    if tokens or metrics_tokens:
        app.add_middleware(
            BearerAuth,
            tokens=tokens or {},
            public_get_paths=public_get_paths,
            jsonrpc_paths=jsonrpc_paths,
            metrics_tokens=metrics_tokens,
        )
    # Outside authentication: a page of another site learns nothing, not even that a token is
    # needed.
    app.add_middleware(
        TrustedHosts,
        rules=HostRules(allowed_hosts or LOOPBACK_HOSTS),
        exempt_paths=FRAME_PATHS,
        jsonrpc_paths=jsonrpc_paths,
    )
    # Outside the guards, so refused requests are timed and traced like the others.
    app.add_middleware(
        RequestTelemetry,
        histogram=http_request_histogram(service.metric_prefix),
        auth_failures=http_auth_failures(service.metric_prefix),
        routes=route_paths(every_route),
        quiet_paths=FRAME_PATHS,
    )
    app.add_middleware(CloseWhileDraining)  # refusals close too while draining
    app.add_middleware(MetricsPort, limits=limits)  # a wrong port is 404 before anything else
    # Outermost: every header is read as RFC 9110 defines its value, authentication included.
    app.add_middleware(TrimmedHeaderValues)
    return app
