"""ASGI middleware shared by the services: one latency sample and one server span per request.

Routes are labelled by their path when it is one of the service's known routes and ``other``
otherwise, so a scanner probing random URLs cannot blow up the metric's cardinality. Requests are
also labelled by their caller: the name authentication (``services.common.auth``) gave the token
the request proved to hold, never the token, and ``anonymous`` without one. Names come from the
server's own token settings, not from the request, and a process labels at most
:data:`MAX_CALLERS` of them (``other`` past that), so a caller cannot mint series either.
"""

from __future__ import annotations

import contextvars
import logging
import time
from collections.abc import Collection
from typing import Any

from opentelemetry import context as otel_context
from opentelemetry import trace
from prometheus_client import Counter, Histogram
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.telemetry import exemplars
from services.telemetry.tracing import extract_context, tracer

_tracer = tracer(__name__)


log = logging.getLogger("nfcorpus.request")
#: Fields the application adds to its request's log line (see :func:`annotate`).
_FIELDS: contextvars.ContextVar[dict[str, Any] | None] = contextvars.ContextVar(
    "request_fields", default=None
)
#: Query text kept in a log line: enough to recognise a request, not to log what users ask.
QUERY_PREFIX_CHARS = 24


def annotate(**fields: Any) -> None:
    """Add ``fields`` to the current request's log line (tasks started by it share the dict)."""
    current = _FIELDS.get()
    if current is not None:
        current.update(fields)


def query_prefix(query: str) -> str:
    """The first few characters of a query, marked as cut when they are."""
    return query if len(query) <= QUERY_PREFIX_CHARS else query[:QUERY_PREFIX_CHARS] + "…"


#: The ``outcome`` label of a request: by status class, abandoned by its client, or ``failed``: a
#: 2xx whose answer is a failure (an A2A task that failed, with the ``reason`` it annotated).
OUTCOMES = ("ok", "failed", "client_error", "server_error", "abandoned")
#: Scope key set on a request cancelled because its client went away (``services.common.disconnect``).
ABANDONED = "nfcorpus.abandoned"
#: Scope keys authentication sets: the caller's name, and why it refused a request: ``missing``
#: (no token), ``invalid`` (a token no one was given) or ``wrong_purpose`` (a known token of
#: another purpose: a caller's at ``/metrics``, the scrape token elsewhere).
CALLER = "nfcorpus.caller"
AUTH_FAILURE = "nfcorpus.auth_failure"
#: The caller of a request without a token (authentication off, a public path, or refused), of
#: one with a token no one was given, and of callers past :data:`MAX_CALLERS`.
ANONYMOUS, UNKNOWN, OTHER_CALLERS = "anonymous", "unknown", "other"
#: The name of a scrape token given without one (one caller, however many tokens rotate).
SCRAPER = "scraper"
#: The label of a caller's token given without a name. The server knows it by a name derived
#: from its hash (what scopes its A2A tasks); that name stays out of metrics and logs, where it
#: would let a reader check guesses of the token, and a new one with each rotation would take
#: a place of the bound.
UNNAMED = "unnamed"
#: Labels the telemetry gives of its own: always labelled, never counted against the bound.
OWN_LABELS = frozenset({ANONYMOUS, UNKNOWN, OTHER_CALLERS, SCRAPER, UNNAMED})
#: Token names one process labels, besides :data:`OWN_LABELS`. A server's callers are the few its
#: token settings name; the bound holds a token file of thousands of names (or one renamed again
#: and again) to a fixed number of series.
MAX_CALLERS = 64


class RequestTelemetry:
    """Times each request into ``histogram{route, outcome, caller}``, counts refusals, traces it.

    ``auth_failures{route, reason, caller}`` counts the requests authentication refused.
    """

    def __init__(
        self,
        app: ASGIApp,
        histogram: Histogram,
        auth_failures: Counter,
        routes: Collection[str],
        quiet_paths: Collection[str] = (),
    ) -> None:
        """Wrap ``app``; ``routes`` get their own label, ``quiet_paths`` no log line.

        ``quiet_paths``: the probes and scrapes, asked every few seconds by design.
        """
        self._app = app
        self._quiet = frozenset(quiet_paths)
        self._histogram = histogram
        self._auth_failures = auth_failures
        self._routes = frozenset(routes)
        self._callers: set[str] = set()
        # Every series at 0 from the start, failures included: rate() misses a first failure
        # that creates its series. Callers are known only as they come, so only the anonymous
        # ones (every request of a server without authentication, every refusal) are.
        for route in [*self._routes, "other"]:
            for outcome in OUTCOMES:
                histogram.labels(route, outcome, ANONYMOUS)
            auth_failures.labels(route, "missing", ANONYMOUS)
            auth_failures.labels(route, "invalid", UNKNOWN)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Observe one request."""
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        path = scope.get("path", "")
        route = path if path in self._routes else "other"
        status = 500
        trace_header: tuple[bytes, bytes] | None = None

        async def send_and_record(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
                if trace_header is not None:
                    message = {**message, "headers": [*message.get("headers", []), trace_header]}
            await send(message)

        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        token = otel_context.attach(extract_context(headers))
        fields: dict[str, Any] = {}
        fields_token = _FIELDS.set(fields)
        started = time.perf_counter()
        try:
            with _tracer.start_as_current_span(
                f"{scope['method']} {route}", kind=trace.SpanKind.SERVER
            ) as span:
                trace_header = _traceresponse(span)
                try:
                    await self._app(scope, receive, send_and_record)
                finally:
                    span.set_attribute("http.response.status_code", status)
                    _describe(span, fields)
                    elapsed = time.perf_counter() - started
                    outcome = _outcome(status, scope, fields)
                    caller = self._caller(scope)
                    exemplars.observe(
                        self._histogram, elapsed, route=route, outcome=outcome, caller=caller
                    )
                    failure = scope.get(AUTH_FAILURE)
                    if failure is not None:
                        self._auth_failures.labels(route, failure, caller).inc()
                    if path not in self._quiet:
                        log.log(
                            logging.INFO if outcome == "ok" else logging.WARNING,
                            "%s %s %d %s %s",
                            scope["method"],
                            route,
                            status,
                            outcome,
                            caller,
                            extra={
                                "route": route,
                                "method": scope["method"],
                                "status": status,
                                "outcome": outcome,
                                "caller": caller,
                                "duration_ms": round(elapsed * 1000, 1),
                                **fields,
                            },
                        )
        finally:
            _FIELDS.reset(fields_token)
            otel_context.detach(token)

    def _caller(self, scope: Scope) -> str:
        """The request's caller label: its name while fewer than MAX_CALLERS were seen."""
        caller = str(scope.get(CALLER, ANONYMOUS))
        if caller in OWN_LABELS or caller in self._callers:
            return caller
        if len(self._callers) < MAX_CALLERS:
            self._callers.add(caller)
            return caller
        return OTHER_CALLERS


def _outcome(status: int, scope: Scope, fields: dict[str, Any]) -> str:
    if scope.get(ABANDONED):
        return "abandoned"
    if status < 400:
        return "failed" if "reason" in fields else "ok"
    return "client_error" if status < 500 else "server_error"


def _traceresponse(span: trace.Span) -> tuple[bytes, bytes] | None:
    """The ``traceresponse`` header (W3C Trace Context level 2).

    The caller learns its request's trace id, to look it up, whether it sent a ``traceparent``.
    """
    context = span.get_span_context()
    if not context.is_valid:
        return None
    value = f"00-{context.trace_id:032x}-{context.span_id:016x}-{context.trace_flags:02x}"
    return b"traceresponse", value.encode()


def _describe(span: trace.Span, fields: dict[str, Any]) -> None:
    """Put what the service annotated on its server span too; a failure reason is an error.

    An A2A request that failed in validation is a 200 carrying a failed task: the status code
    alone would call its span a success.
    """
    for key, value in fields.items():
        if isinstance(value, str | int | float | bool):
            span.set_attribute(f"nfcorpus.{key}", value)
    if "reason" in fields:
        span.set_status(trace.StatusCode.ERROR, str(fields["reason"]))
