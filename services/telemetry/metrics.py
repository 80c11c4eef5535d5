"""Prometheus helpers shared by the services.

Each service declares its own metrics next to the code they measure, with the latency buckets
every histogram shares (:data:`LATENCY_BUCKETS`, defined beside the exemplars kept per bucket in
``services.telemetry.exemplars``); this module holds the HTTP histogram every service shares and
the ``/metrics`` endpoint, which also works under gunicorn: when ``PROMETHEUS_MULTIPROC_DIR`` is
set every worker writes its samples there and the endpoint merges them (with the pod's process
metrics, ``services.telemetry.multiprocess``), so a scrape sees the whole pod rather than
whichever worker answered.
"""

from __future__ import annotations

import os
from functools import cache
from pathlib import Path

from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, Counter, Histogram
from prometheus_client import generate_latest as text_exposition
from prometheus_client.openmetrics import exposition as openmetrics
from starlette.requests import Request
from starlette.responses import Response

from services.telemetry.exemplars import LATENCY_BUCKETS
from services.telemetry.multiprocess import pod_registry

__all__ = ["LATENCY_BUCKETS", "http_auth_failures", "http_request_histogram", "metrics_endpoint"]


@cache
def http_request_histogram(prefix: str) -> Histogram:
    """``<prefix>_http_request_duration_seconds{route, outcome, caller}``, registered once.

    Cached because a metric registered twice is an error, and an app factory may run several
    times in one process (tests).
    """
    return Histogram(
        f"{prefix}_http_request_duration_seconds",
        "HTTP request latency by route, outcome and caller (a token's name, never the token).",
        ["route", "outcome", "caller"],
        buckets=LATENCY_BUCKETS,
    )


@cache
def http_auth_failures(prefix: str) -> Counter:
    """``<prefix>_http_auth_failures_total{route, reason, caller}``, registered once per process."""
    return Counter(
        f"{prefix}_http_auth_failures",
        "Requests authentication refused (401), by route, reason and caller.",
        ["route", "reason", "caller"],
    )


def _registry() -> CollectorRegistry:
    metrics_dir = os.environ.get("PROMETHEUS_MULTIPROC_DIR")
    return pod_registry(Path(metrics_dir)) if metrics_dir else REGISTRY


async def metrics_endpoint(request: Request) -> Response:
    """Serve every metric of this process (or of the whole pod, in multiprocess mode).

    In the OpenMetrics format when the scraper asks for it (Prometheus does, with exemplar
    storage on): only that format carries exemplars.
    """
    registry = _registry()
    if "application/openmetrics-text" in request.headers.get("accept", ""):
        body = openmetrics.generate_latest(registry)  # type: ignore[no-untyped-call]
        return Response(body, media_type=openmetrics.CONTENT_TYPE_LATEST)
    return Response(text_exposition(registry), media_type=CONTENT_TYPE_LATEST)
