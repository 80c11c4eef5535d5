"""The A2A rules the request guard applies to JSON-RPC bodies: envelope, schema, parts, version.

Each is answered as a JSON-RPC error naming the problem, before the SDK sees the request; a REST
path with the same body is left to its endpoint.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from services.common.a2a_input import message_problem
from services.common.frame import ServiceId, service_app

SERVICE = ServiceId(metric_prefix="guardrules", trace_name="guard-rules-test")


async def _echo(request: Request) -> Response:
    return JSONResponse({"received": len(await request.body())})


@pytest.fixture
async def client() -> AsyncIterator[httpx.AsyncClient]:
    routes = [Route("/echo", _echo, methods=["POST"]), Route("/rpc", _echo, methods=["POST"])]
    app = service_app(
        SERVICE, routes, jsonrpc_paths=["/rpc"], body_checks={"/rpc": message_problem}
    )
    transport = httpx.ASGITransport(app=app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
        yield c


async def test_a2a_file_parts_must_hold_base64(client: httpx.AsyncClient) -> None:
    def call(part: dict[str, Any]) -> dict[str, object]:
        legacy = "kind" in part
        message = {"messageId": "m", "role": "user" if legacy else "ROLE_USER", "parts": [part]}
        method = "message/send" if legacy else "SendMessage"
        return {"jsonrpc": "2.0", "id": 7, "method": method, "params": {"message": message}}

    legacy_unpadded = {"kind": "file", "file": {"bytes": "aGVsbG8"}}  # 0.3 needs the padding
    for part in ({"kind": "file", "file": {"bytes": "!!!"}}, {"raw": "!!!"}, legacy_unpadded):
        bad = (await client.post("/rpc", json=call(part))).json()
        assert bad["id"] == 7 and bad["error"]["message"] == (
            "invalid request: message part 0 holds bytes that are not valid base64"
        )
    good: list[dict[str, Any]] = [{"raw": "aGVsbG8"}, {"raw": "aGVs-G8_"}]
    good.append({"kind": "file", "file": {"bytes": "aGVsbG8="}})
    for part in [*good, {"kind": "text", "text": "x"}]:
        assert (await client.post("/rpc", json=call(part))).json().get("received")


@pytest.mark.parametrize(
    ("body", "problem"),
    [
        ({"jsonrpc": "2.0", "id": 1, "method": []}, "method must be a string"),
        ({"jsonrpc": "1.0", "id": 1, "method": "x"}, 'jsonrpc must be "2.0"'),
        ({"jsonrpc": "2.0", "id": True, "method": "x"}, "id must be a string, an integer or null"),
        ({"jsonrpc": "2.0", "id": 1, "method": "x", "params": [1]}, "params must be an object"),
        ({"jsonrpc": "2.0", "id": 1}, "method is required"),
        ([{"jsonrpc": "2.0", "id": 1, "method": "x"}], "batches are not accepted"),
    ],
)
async def test_every_json_rpc_path_checks_the_envelope(
    client: httpx.AsyncClient, body: Any, problem: str
) -> None:
    error = (await client.post("/rpc", json=body)).json()["error"]
    assert error["code"] == -32600 and problem in error["message"]
    assert (await client.post("/echo", json=body)).status_code == 200  # REST: its own business


async def test_a_0_3_message_off_its_schema_is_named_without_echoing_it(
    client: httpx.AsyncClient,
) -> None:
    message = {"kind": "message", "messageId": "m", "role": "robot-with-a-secret", "parts": []}
    body = {"jsonrpc": "2.0", "id": 3, "method": "message/send", "params": {"message": message}}
    error = (await client.post("/rpc", json=body)).json()["error"]
    assert error["message"].startswith("invalid request: params.message.role: Input should be")
    assert "(a message/send request)" in error["message"]
    assert "robot-with-a-secret" not in error["message"] and "pydantic" not in error["message"]


@pytest.mark.parametrize(
    ("version", "code", "message"),
    [
        (
            "2.0",
            -32009,
            "A2A version '2.0' is not supported: this agent speaks 1.0 (A2A-Version: 1.0) "
            "and 0.3 (no header)",
        ),
        (
            "1.0",
            -32601,
            "message/send is an A2A 0.3 method, but A2A-Version is 1.0: send it without the "
            "header (or with 0.3), or call its 1.0 method",
        ),
    ],
)
async def test_a_0_3_method_under_another_era_s_version_gets_that_protocol_error(
    client: httpx.AsyncClient, version: str, code: int, message: str
) -> None:
    body = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "message/send",
        "params": {"message": {"kind": "message", "messageId": "m", "role": "user", "parts": []}},
    }
    answer = await client.post("/rpc", json=body, headers={"A2A-Version": version})
    assert answer.status_code == 200
    assert answer.json() == {"jsonrpc": "2.0", "id": 7, "error": {"code": code, "message": message}}
    for fine in ({}, {"A2A-Version": "0.3"}):  # what 0.3 clients send: no header, or 0.3
        passed = await client.post("/rpc", json=body, headers=fine)
        assert "received" in passed.json()
