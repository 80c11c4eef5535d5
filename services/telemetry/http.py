"""ASGI middleware shared by the services: one latency sample and one server span per request.

Routes are labelled by their path when it is one of the service's known routes and ``other``
otherwise, so a scanner probing random URLs cannot blow up the metric's cardinality.
"""

from __future__ import annotations

import time
from collections.abc import Collection

from opentelemetry import context as otel_context
from opentelemetry import trace
from prometheus_client import Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.telemetry.tracing import extract_context, tracer

_tracer = tracer(__name__)


#: The ``outcome`` label of a request: by status class, or abandoned by its client.
OUTCOMES = ("ok", "client_error", "server_error", "abandoned")
#: Scope key set on a request cancelled because its client went away (``services.common.disconnect``).
ABANDONED = "nfcorpus.abandoned"


class RequestTelemetry:
    """Times each HTTP request into ``histogram{route, outcome}`` and traces it."""

    def __init__(self, app: ASGIApp, histogram: Histogram, routes: Collection[str]) -> None:
        """Wrap ``app``; ``routes`` are the paths that get their own label."""
        self._app = app
        self._histogram = histogram
        self._routes = frozenset(routes)
        # Every series at 0 from the start, failures included: rate() misses a first failure
        # that creates its series.
        for route in [*self._routes, "other"]:
            for outcome in OUTCOMES:
                histogram.labels(route, outcome)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Observe one request."""
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        path = scope.get("path", "")
        route = path if path in self._routes else "other"
        status = 500

        async def send_and_record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        token = otel_context.attach(extract_context(headers))
        started = time.perf_counter()
        try:
            with _tracer.start_as_current_span(
                f"{scope['method']} {route}", kind=trace.SpanKind.SERVER
            ) as span:
                await self._app(scope, receive, send_and_record)
                span.set_attribute("http.response.status_code", status)
        finally:
            outcome = "ok" if status < 400 else "client_error" if status < 500 else "server_error"
            if scope.get(ABANDONED):
                outcome = "abandoned"
            self._histogram.labels(route, outcome).observe(time.perf_counter() - started)
            otel_context.detach(token)
