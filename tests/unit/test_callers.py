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

from services.common.frame import ServiceId, service_app
from services.common.tokens import load_tokens
from services.mcp_server.settings import McpServerSettings
from services.telemetry.http import MAX_CALLERS, OTHER_CALLERS, SCRAPER, UNKNOWN, UNNAMED

ALICE = "alice-0123456789abcdef"
SCRAPE = "scrape-0123456789abcdef"
UNKNOWN_TOKEN = "unknown-0123456789abcdef"


async def _hello(_: Request) -> Response:
    return PlainTextResponse("hello")


def _client(prefix: str, tokens: str, scrape: str = f"prometheus:{SCRAPE}") -> httpx.AsyncClient:
    app = service_app(
        ServiceId(metric_prefix=prefix, trace_name=prefix),
        [Route("/hello", _hello, methods=["GET"])],
        tokens=load_tokens(tokens, None),
        metrics_tokens=load_tokens(scrape, None, unnamed=SCRAPER),  # as AuthFields reads them
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
    listed = ",".join(f"{n}:{t}" for n, t in tokens.items())
    async with _client("boundtest", listed, scrape=SCRAPE) as client:
        for token in tokens.values():
            assert (await client.get("/hello", headers=_bearer(token))).status_code == 200

        # The telemetry's own labels stay theirs with the bound full.
        assert (await client.get("/hello", headers=_bearer(UNKNOWN_TOKEN))).status_code == 401
        assert (await client.get("/metrics", headers=_bearer(SCRAPE))).status_code == 200
        assert (await client.get("/metrics", headers=_bearer(SCRAPE))).status_code == 200

    requests = _samples("boundtest_http_request_duration_seconds_count")
    callers = {dict(labels)["caller"] for labels, value in requests.items() if value}
    # The first names keep their own label, the rest share one.
    named = {c for c in callers if c.startswith("caller")}
    assert len(named) == MAX_CALLERS and "caller0" in named
    assert callers - named == {OTHER_CALLERS, UNKNOWN, SCRAPER}
    assert (
        _samples("boundtest_http_auth_failures_total")[
            (("caller", UNKNOWN), ("reason", "invalid"), ("route", "/hello"))
        ]
        == 1
    )


def test_a_scrape_token_without_a_name_is_the_scraper_s() -> None:
    # As the chart's Secret item holds it (the ServiceMonitor sends the item as it is); two
    # tokens while one is rotated out are still the one scraper.
    settings = McpServerSettings(metrics_token=f"{SCRAPE},{ALICE}")
    assert dict(settings.metrics_tokens()) == {SCRAPE: SCRAPER, ALICE: SCRAPER}
    named = McpServerSettings(metrics_token=f"prometheus:{SCRAPE}")
    assert dict(named.metrics_tokens()) == {SCRAPE: "prometheus"}


async def test_a_bare_token_is_unnamed_in_metrics_and_its_hash_stays_out() -> None:
    # The server knows a bare token by a name from its hash (its A2A tasks are scoped by it);
    # the hash would let a reader of the figures check guesses of the token, and each rotation
    # would take a place of the bound.
    bare = "bare-0123456789abcdefgh"
    (hashed,) = load_tokens(bare, None).values()
    async with _client("unnamedtest", f"{bare},alice:{ALICE}") as client:
        assert (await client.get("/hello", headers=_bearer(bare))).status_code == 200
    requests = _samples("unnamedtest_http_request_duration_seconds_count")
    assert requests[(("caller", UNNAMED), ("outcome", "ok"), ("route", "/hello"))] == 1
    assert all(hashed not in f"{labels}" for labels in requests)


def test_the_mcp_server_s_bare_token_is_the_purple_agent_s() -> None:
    # The chart gives the purple agents one bare token for the MCP server; other callers' tokens
    # are named.
    settings = McpServerSettings(auth_tokens=f"{ALICE},bench:{SCRAPE}")
    assert dict(settings.tokens()) == {ALICE: "purple-agent", SCRAPE: "bench"}
