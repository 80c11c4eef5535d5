"""Admission: the requests one process works on at once are bounded; more get 503 at once.

A request takes a place once its body is in (:mod:`services.common.guard.body`): a client slow to
send holds no place, so idle or trickling bodies cannot turn other callers away. The kubelet's
probes are never refused. ``/metrics`` has a small bound of its own (:data:`METRICS_IN_FLIGHT`)
instead of ``max_in_flight``: a scrape still gets through while the server is saturated, which is
when its figures matter most, yet a flood of scrapes (each answer held in memory until a slow
reader takes it) cannot grow without limit.
"""

from __future__ import annotations

from collections.abc import Collection

from starlette.types import ASGIApp, Receive, Scope, Send

from services.common.guard.body import DECODED
from services.common.guard.refusal import Guard, Refusal
from services.common.jsonrpc import request_id
from services.common.limits import ServerLimits
from services.common.paths import METRICS, PROBES

#: Scrapes one process serves at once: a Prometheus pair scraping the same target, and room for
#: a person or a test reading it too; more get 503 with ``Retry-After``.
METRICS_IN_FLIGHT = 4


class Admission(Guard):
    """ASGI middleware: at most ``max_in_flight`` requests (and a few scrapes) at once."""

    def __init__(
        self, app: ASGIApp, limits: ServerLimits, jsonrpc_paths: Collection[str] = ()
    ) -> None:
        """Bound the requests ``app`` works on by ``limits.max_in_flight``."""
        super().__init__(app, jsonrpc_paths)
        self._limits = limits
        self.in_flight = 0
        self.metrics_in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Admit a request into a free place, or refuse it."""
        if scope["type"] != "http" or scope["path"] in PROBES:
            await self._app(scope, receive, send)
            return
        scrape = scope["path"] == METRICS
        bound = METRICS_IN_FLIGHT if scrape else self._limits.max_in_flight
        taken = self.metrics_in_flight if scrape else self.in_flight
        if taken >= bound:
            what = "scrapes" if scrape else "requests"
            message = f"overloaded: {bound} {what} in progress, retry shortly"
            retry, refused_id = self._limits.retry_after_s, request_id(scope.get(DECODED))
            refusal = Refusal(503, message, retry_after=retry, request_id=refused_id)
            await self._refuse(scope, send, refusal)
            return
        if scrape:
            self.metrics_in_flight += 1
        else:
            self.in_flight += 1
        try:
            await self._app(scope, receive, send)
        finally:
            if scrape:
                self.metrics_in_flight -= 1
            else:
                self.in_flight -= 1
