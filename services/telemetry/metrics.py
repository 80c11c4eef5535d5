"""Prometheus helpers shared by the services.

Each service declares its own metrics next to the code they measure; this module only holds the
common bucket layout and the ``/metrics`` endpoint, which also works under gunicorn: when
``PROMETHEUS_MULTIPROC_DIR`` is set every worker writes its samples there and the endpoint merges
them, so a scrape sees the whole pod rather than whichever worker answered.
"""

from __future__ import annotations

import os
from functools import cache

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Histogram, generate_latest
from prometheus_client.multiprocess import MultiProcessCollector
from starlette.requests import Request
from starlette.responses import Response

# Latency buckets in seconds: dense where searches and answers fall (5-500 ms), with an edge at
# every threshold an SLO or alert uses (25, 50, 100, 250, 500 ms, 1, 2.5, 5, 10, 30, 60 s), so
# "the share of requests under X" is exact rather than interpolated inside a doubling bucket.
LATENCY_BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.35, 0.5, 0.75, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
)  # fmt: skip


@cache
def http_request_histogram(prefix: str) -> Histogram:
    """``<prefix>_http_request_duration_seconds{route, outcome}``, registered once per process.

    Cached because a metric registered twice is an error, and an app factory may run several
    times in one process (tests).
    """
    return Histogram(
        f"{prefix}_http_request_duration_seconds",
        "HTTP request latency by route and outcome.",
        ["route", "outcome"],
        buckets=LATENCY_BUCKETS,
    )


def _registry() -> CollectorRegistry | None:
    if os.environ.get("PROMETHEUS_MULTIPROC_DIR"):
        registry = CollectorRegistry()
        MultiProcessCollector(registry)  # type: ignore[no-untyped-call]
        return registry
    return None


async def metrics_endpoint(_: Request) -> Response:
    """Serve every metric of this process (or of all workers, in multiprocess mode)."""
    registry = _registry()
    body = generate_latest(registry) if registry is not None else generate_latest()
    return Response(body, media_type=CONTENT_TYPE_LATEST)
