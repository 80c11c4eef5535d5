"""The request guard of the service frame: overload, body size and time, nesting, bad text."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import Message, Receive, Scope, Send

from services.common.a2a_input import message_problem
from services.common.frame import ServiceId, service_app
from services.common.guard.admission import METRICS_IN_FLIGHT, Admission
from services.common.guard.body import decode_json, plainly_acceptable
from services.common.guard.hosts import HostFields
from services.common.guard.refusal import Refusal
from services.common.limits import ServerLimits
from services.green_agent.settings import GreenSettings
from services.mcp_server.settings import McpServerSettings
from services.purple_agent.settings import PurpleSettings

SERVICE = ServiceId(metric_prefix="guardtest", trace_name="guard-test")
LIMITS = ServerLimits(max_body_bytes=2048, max_json_depth=8, max_in_flight=1, body_timeout_s=0.2)
release = asyncio.Event()


JSON = {"content-type": "application/json"}


async def _echo(request: Request) -> Response:
    body = await request.body()
    return JSONResponse({"received": len(body)})


async def _slow(_: Request) -> Response:
    await release.wait()
    return JSONResponse({"done": True})


def _app() -> httpx.AsyncClient:
    routes = [Route("/echo", _echo, methods=["POST"]), Route("/rpc", _echo, methods=["POST"])]
    routes.append(Route("/slow", _slow, methods=["GET"]))
    app = service_app(
        SERVICE,
        routes,
        jsonrpc_paths=["/rpc"],
        body_checks={"/rpc": message_problem},
        limits=LIMITS,
        allowed_hosts=["guard"],
    )
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://guard")


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    async with _app() as c:
        yield c


def _nested(depth: int) -> bytes:
    return ("[" * depth + "]" * depth).encode()


async def test_small_bodies_and_non_json_pass_unchanged(client: httpx.AsyncClient) -> None:
    for body in (b'{"query": "x"}', b"not json at all", _nested(8), "caf\u00e9".encode()):
        response = await client.post("/echo", content=body)
        assert response.json() == {"received": len(body)}


async def test_a_declared_oversized_body_is_refused_before_it_is_read(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post("/echo", content=b"x" * 4096)
    assert response.status_code == 413 and response.headers["connection"] == "close"
    assert response.json()["detail"][0]["message"] == (
        "request body of 4096 bytes is over the 2048-byte limit"
    )


async def test_a_streamed_oversized_body_is_refused_as_it_passes_the_limit(
    client: httpx.AsyncClient,
) -> None:
    sent = 0

    async def chunks() -> AsyncIterator[bytes]:
        nonlocal sent
        for _ in range(100):
            sent += 1
            yield b"x" * 1024

    response = await client.post("/echo", content=chunks())
    assert response.status_code == 413
    assert "over the 2048-byte limit" in response.json()["detail"][0]["message"]
    assert sent < 100  # the rest was never asked for


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        (_nested(9), "JSON nested deeper than 8 levels"),
        (_nested(1000), "JSON nested deeper than 8 levels"),  # at the decoder's stack limit
        (b'{"query": "\\ud800"}', "lone UTF-16 surrogate"),
        (b'{"\\udfff": 1}', "lone UTF-16 surrogate"),
    ],
)
async def test_bad_json_is_a_clear_4xx_on_rest_and_an_invalid_request_over_json_rpc(
    client: httpx.AsyncClient, body: bytes, problem: str
) -> None:
    rest = await client.post("/echo", content=body)
    assert rest.status_code == 422 and problem in rest.json()["detail"][0]["message"]
    rpc = await client.post("/rpc", content=body, headers=JSON)
    assert rpc.status_code == 200
    error = rpc.json()["error"]
    assert error["code"] == -32600 and error["message"].startswith("invalid request: ")
    assert problem in error["message"]


async def test_a_paired_surrogate_escape_is_fine(client: httpx.AsyncClient) -> None:
    body = b'{"query": "\\ud83d\\ude00"}'  # one emoji, written as a surrogate pair
    assert (await client.post("/echo", content=body)).json() == {"received": len(body)}


async def test_a_body_that_is_not_utf8_is_refused(client: httpx.AsyncClient) -> None:
    for path in ("/echo", "/rpc"):
        response = await client.post(path, content=b"\x00\x00\x00\x00\xff", headers=JSON)
        assert "the body is not UTF-8 text (byte 4); JSON must be" in response.text


@pytest.mark.parametrize(
    ("headers", "named"),
    [
        ({"content-type": "text/plain"}, "not text/plain"),  # what a web page sends unasked
        ({"content-type": "application/x-www-form-urlencoded"}, "not application/x-www-form"),
        ({"content-type": "multipart/form-data; boundary=x"}, "not multipart/form-data"),
        ({}, "the request has none"),
    ],
)
async def test_a_json_rpc_post_of_another_content_type_is_refused_415(
    client: httpx.AsyncClient, headers: dict[str, str], named: str
) -> None:
    # A browser sends these without a CORS preflight: a page could reach a JSON-RPC endpoint on
    # loopback on a visitor's behalf. application/json needs a preflight our servers never allow.
    body = b'{"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}'
    response = await client.post("/rpc", content=body, headers=headers)
    assert response.status_code == 415 and response.headers["connection"] == "close"
    error = response.json()["error"]
    assert error["code"] == -32600 and "Content-Type: application/json" in error["message"]
    assert named in error["message"]
    # The media type decides; its parameters and case do not. REST paths are not JSON-RPC.
    for accepted in ("application/json", "Application/JSON; charset=utf-8"):
        ok = await client.post("/rpc", content=body, headers={"content-type": accepted})
        assert ok.status_code == 200
    assert (await client.post("/echo", content=body, headers=headers)).status_code == 200


async def test_over_capacity_is_refused_at_once_and_probes_still_answer(
    client: httpx.AsyncClient,
) -> None:
    release.clear()
    first = asyncio.create_task(client.get("/slow"))
    await asyncio.sleep(0.05)
    busy = await client.post("/echo", content=b"{}")
    assert busy.status_code == 503 and busy.headers["retry-after"] == "1"
    assert busy.json()["error"].startswith("overloaded: 1 requests in progress")
    envelope = {"jsonrpc": "2.0", "id": 7, "method": "GetTask", "params": {}}
    rpc = await client.post("/rpc", json=envelope)
    assert rpc.status_code == 503 and rpc.json()["error"]["code"] == -32000
    assert rpc.json()["id"] == 7  # read from the body, which is in before a place is asked
    assert (await client.get("/healthz")).status_code == 200
    release.set()
    assert (await first).json() == {"done": True}
    assert (await client.post("/echo", content=b"{}")).status_code == 200


async def test_scrapes_have_a_small_bound_of_their_own() -> None:
    """A saturated server still answers its scraper; a flood of scrapes is refused past a few."""
    held = asyncio.Event()

    async def app(scope: Scope, _: Receive, send: Send) -> None:
        if scope["path"] in ("/metrics", "/slow"):
            await held.wait()  # a slow answer: a scrape a slow reader holds, or a long request
        await send({"type": "http.response.start", "status": 200, "headers": []})
        await send({"type": "http.response.body", "body": b"ok"})

    guard = Admission(app, LIMITS)  # one request in flight at most
    transport = httpx.ASGITransport(app=guard)
    async with httpx.AsyncClient(transport=transport, base_url="http://guard") as client:
        busy = asyncio.create_task(client.get("/slow"))
        scrapes = [asyncio.create_task(client.get("/metrics")) for _ in range(METRICS_IN_FLIGHT)]
        await asyncio.sleep(0.05)
        assert guard.in_flight == 1 and guard.metrics_in_flight == METRICS_IN_FLIGHT
        flood = await client.get("/metrics")
        assert flood.status_code == 503 and flood.headers["retry-after"] == "1"
        assert flood.json()["error"].startswith(f"overloaded: {METRICS_IN_FLIGHT} scrapes")
        assert (await client.get("/other")).status_code == 503  # the requests' own bound
        held.set()
        assert [(await s).status_code for s in scrapes] == [200] * METRICS_IN_FLIGHT
        assert (await busy).status_code == 200
        assert guard.metrics_in_flight == 0 and (await client.get("/metrics")).status_code == 200


async def test_a_body_that_never_finishes_gets_408() -> None:
    app = service_app(SERVICE, [Route("/echo", _echo, methods=["POST"])], limits=LIMITS)
    sent: list[Message] = []

    async def receive() -> Message:
        if not sent:
            sent.append({})
            return {"type": "http.request", "body": b"{", "more_body": True}
        await asyncio.sleep(10)  # the client stalls
        raise AssertionError("unreachable")

    async def send(message: Message) -> None:
        sent.append(message)

    scope = {
        "type": "http",
        "method": "POST",
        "path": "/echo",
        "headers": [(b"host", b"127.0.0.1:80")],
        "query_string": b"",
        "root_path": "",
        "scheme": "http",
        "server": ("guard", 80),
    }
    await asyncio.wait_for(app(scope, receive, send), timeout=5)
    start = next(m for m in sent if m.get("type") == "http.response.start")
    body = next(m for m in sent if m.get("type") == "http.response.body")
    assert start["status"] == 408
    assert json.loads(body["body"])["detail"][0]["message"] == (
        "request body not received within 0.2 s"
    )


def test_nesting_past_the_decoder_stack_is_a_refusal_not_a_crash() -> None:
    with pytest.raises(Refusal, match="nested deeper than 32 levels"):
        decode_json(_nested(100_000), 32)


def test_the_text_scan_skips_the_walk_only_where_nothing_can_be_wrong() -> None:
    assert plainly_acceptable('{"a": [1, 2]}', 2)
    assert not plainly_acceptable("[[[]]]", 2)  # more brackets than levels allowed: walked
    assert not plainly_acceptable('{"q": "\\ud800"}', 8)  # an escape may decode to a surrogate
    assert not plainly_acceptable('{"q": "caf\u00e9"}', 8)  # non-ASCII text: walked
    # Many brackets at little depth fail the scan, and the walk accepts them.
    decode_json(("[" + ", ".join(["{}"] * 20) + "]").encode(), 8)


@pytest.mark.parametrize(
    ("settings", "prefix"),
    [(GreenSettings, "GREEN_"), (PurpleSettings, "PURPLE_"), (McpServerSettings, "MCP_")],
)
def test_every_server_reads_its_allowed_hosts_as_a_comma_list(
    monkeypatch: pytest.MonkeyPatch, settings: type[HostFields], prefix: str
) -> None:
    # As the chart sets it: one variable, names separated by commas (a settings class of its own
    # may not shadow the list's reading with a validator of the same name).
    monkeypatch.setenv(f"{prefix}ALLOWED_HOSTS", "svc:8080, localhost:*,[::1]:*")
    assert settings().allowed_hosts == ["svc:8080", "localhost:*", "[::1]:*"]
