"""Callers by name in the request metrics, never by token, and refusals counted by reason.

The frame's authentication names the caller of each request (the token's name from the server's
own settings); the request telemetry labels the request histogram and the refusal counter with
it, and holds the number of names it labels to ``MAX_CALLERS``. tests/integration/
test_caller_names.py runs the real servers and reads their log lines and ``/metrics``.
"""

from __future__ import annotations

import httpx
from prometheus_client import REGISTRY
from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response
from starlette.routing import Route

from services.common.auth import SCRAPER
from services.common.frame import ServiceId, service_app
from services.common.tokens import load_tokens
from services.mcp_server.settings import McpServerSettings
from services.telemetry.http import MAX_CALLERS, OTHER_CALLERS

ALICE = "alice-0123456789abcdef"
SCRAPE = "scrape-0123456789abcdef"
UNKNOWN_TOKEN = "unknown-0123456789abcdef"


async def _hello(_: Request) -> Response:
    return PlainTextResponse("hello")


def _client(prefix: str, tokens: str) -> httpx.AsyncClient:
    app = service_app(
        ServiceId(metric_prefix=prefix, trace_name=prefix),
        [Route("/hello", _hello, methods=["GET"])],
        tokens=load_tokens(tokens, None),
        metrics_tokens=load_tokens(f"prometheus:{SCRAPE}", None),
    )
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1")


def _bearer(token: str) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"}


def _samples(name: str) -> dict[tuple[tuple[str, str], ...], float]:
    return {
        tuple(sorted(s.labels.items())): s.value
        for metric in REGISTRY.collect()
        for s in metric.samples
        if s.name == name
    }


async def test_requests_and_refusals_are_labelled_by_caller_and_reason() -> None:
    async with _client("callertest", f"alice:{ALICE}") as client:
        assert (await client.get("/hello", headers=_bearer(ALICE))).status_code == 200
        assert (await client.get("/hello")).status_code == 401
        assert (await client.get("/hello", headers=_bearer(UNKNOWN_TOKEN))).status_code == 401
        assert (await client.get("/hello", headers=_bearer(SCRAPE))).status_code == 401
        assert (await client.get("/metrics", headers=_bearer(ALICE))).status_code == 401
        assert (await client.get("/metrics", headers=_bearer(SCRAPE))).status_code == 200

    requests = _samples("callertest_http_request_duration_seconds_count")
    assert requests[(("caller", "alice"), ("outcome", "ok"), ("route", "/hello"))] == 1
    assert requests[(("caller", "prometheus"), ("outcome", "ok"), ("route", "/metrics"))] == 1
    refused = {
        labels: value
        for labels, value in _samples("callertest_http_auth_failures_total").items()
        if value
    }
    assert refused == {
        (("caller", "anonymous"), ("reason", "missing"), ("route", "/hello")): 1,
        (("caller", "unknown"), ("reason", "invalid"), ("route", "/hello")): 1,
        # A known token at the wrong door is named: an operator sees whose setting is wrong.
        (("caller", "prometheus"), ("reason", "wrong_purpose"), ("route", "/hello")): 1,
        (("caller", "alice"), ("reason", "wrong_purpose"), ("route", "/metrics")): 1,
    }
    exposed = "\n".join(f"{labels}" for labels in [*requests, *refused])
    for token in (ALICE, SCRAPE, UNKNOWN_TOKEN):
        assert token not in exposed


async def test_a_process_labels_a_bounded_number_of_callers() -> None:
    tokens = {f"caller{i}": f"token-{i:04d}-0123456789abcdef" for i in range(MAX_CALLERS + 5)}
    async with _client("boundtest", ",".join(f"{n}:{t}" for n, t in tokens.items())) as client:
        for token in tokens.values():
            assert (await client.get("/hello", headers=_bearer(token))).status_code == 200

    callers = {
        dict(labels)["caller"]
        for labels, value in _samples("boundtest_http_request_duration_seconds_count").items()
        if value
    }
    # The first names keep their own label (anonymous is one of the bound), the rest share one.
    assert len(callers) == MAX_CALLERS and OTHER_CALLERS in callers
    assert "caller0" in callers and f"caller{MAX_CALLERS + 4}" not in callers


def test_a_scrape_token_without_a_name_is_the_scraper_s() -> None:
    # As the chart's Secret item holds it (the ServiceMonitor sends the item as it is); two
    # tokens while one is rotated out are still the one scraper.
    settings = McpServerSettings(metrics_token=f"{SCRAPE},{ALICE}")
    assert dict(settings.metrics_tokens()) == {SCRAPE: SCRAPER, ALICE: SCRAPER}
    named = McpServerSettings(metrics_token=f"prometheus:{SCRAPE}")
    assert dict(named.metrics_tokens()) == {SCRAPE: "prometheus"}
