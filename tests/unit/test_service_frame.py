"""The service frame every server composes: health, cached readiness, per-route latency."""

from __future__ import annotations

import logging

import httpx
import pytest
from prometheus_client import REGISTRY
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Mount, Route

from services.common.frame import Readiness, ServiceId, route_paths, service_app
from services.telemetry.http import annotate

SERVICE = ServiceId(metric_prefix="frametest", trace_name="frame-test")


async def _hello(_: Request) -> Response:
    return PlainTextResponse("hello")


def _count(route: str, outcome: str) -> float:
    value = REGISTRY.get_sample_value(
        "frametest_http_request_duration_seconds_count",
        {"route": route, "outcome": outcome, "caller": "anonymous"},
    )
    return value or 0.0


async def test_health_readiness_metrics_and_route_labels() -> None:
    checks: list[bool] = []

    async def check() -> tuple[bool, str]:
        checks.append(True)
        return len(checks) > 1, f"check {len(checks)}"

    app = service_app(
        SERVICE,
        [Route("/hello", _hello)],
        readiness=Readiness(check, cache_s=3600.0, detail_key="why"),
    )
    before = _count("other", "client_error")
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        assert (await client.get("/healthz")).json() == {"status": "ok"}
        first = await client.get("/readyz")
        again = await client.get("/readyz")
        assert (await client.get("/hello")).text == "hello"
        assert (await client.get("/no/such/path")).status_code == 404
        metrics = (await client.get("/metrics")).text
    # Not ready, with the reason, and the answer is reused within the cache period.
    assert first.status_code == 503 and first.json() == {"status": "not ready", "why": "check 1"}
    assert again.json() == first.json() and len(checks) == 1
    assert (
        'frametest_http_request_duration_seconds_count{caller="anonymous",outcome="ok",route="/hello"}'
        in metrics
    )
    # A scanner's random paths share one label instead of one series each.
    assert _count("other", "client_error") == before + 1


async def test_no_readiness_route_without_a_check() -> None:
    transport = httpx.ASGITransport(app=service_app(SERVICE, []))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
        assert (await client.get("/readyz")).status_code == 404


def test_route_labels_include_the_paths_of_mounted_apps() -> None:
    inner = Starlette(routes=[Route("/mcp", _hello)])
    assert route_paths([Route("/a", _hello), Mount("", app=inner)]) == {"/a", "/mcp"}


async def test_a_2xx_carrying_a_failure_is_counted_and_logged_as_failed(
    caplog: pytest.LogCaptureFixture,
) -> None:
    async def failing(_: Request) -> Response:
        annotate(reason="mcp_unavailable")  # what the purple agent does for a failed task
        return PlainTextResponse("a failed task")

    app = service_app(SERVICE, [Route("/hello", _hello), Route("/fails", failing)])
    before = _count("/fails", "failed")
    transport = httpx.ASGITransport(app=app)
    with caplog.at_level(logging.INFO, logger="nfcorpus.request"):
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as client:
            assert (await client.get("/fails")).status_code == 200
            assert (await client.get("/hello")).status_code == 200
    assert _count("/fails", "failed") == before + 1
    # Only the request lines: other loggers (the trace exporter's) may write meanwhile.
    failed, ok = [r for r in caplog.records if r.name == "nfcorpus.request"]
    assert (failed.levelname, failed.outcome, failed.reason) == (  # type: ignore[attr-defined]
        "WARNING",
        "failed",
        "mcp_unavailable",
    )
    assert (ok.levelname, ok.outcome) == ("INFO", "ok")  # type: ignore[attr-defined]
