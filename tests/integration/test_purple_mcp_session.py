"""The purple agent's MCP client against real MCP servers of the SDK: one negotiation, then each
call a single POST, answered as JSON or as an SSE stream; a broken answer fails only its call.
"""

from __future__ import annotations

import asyncio
import json
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest
import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel
from starlette.types import ASGIApp, Receive, Scope, Send

from services.purple_agent.mcp_client import McpSearchClient
from services.purple_agent.mcp_errors import McpCallError

#: A query the server answers with JSON that is no JSON-RPC response.
GARBAGE = "garbage please"
JSON = [(b"content-type", b"application/json")]


class Hit(BaseModel):
    doc_id: str
    score: float


class Hits(BaseModel):
    results: list[Hit]


class _Methods:
    """ASGI wrapper recording the JSON-RPC method of every POST."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app
        self.seen: list[str] = []

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        body = b""
        while True:
            message = await receive()
            body += message.get("body", b"")
            if not message.get("more_body"):
                break
        request = json.loads(body)
        self.seen.append(request["method"])
        if request.get("params", {}).get("arguments", {}).get("query") == GARBAGE:
            await send({"type": "http.response.start", "status": 200, "headers": JSON})
            await send({"type": "http.response.body", "body": b'{"hello": "world"}'})
            return
        replayed = False

        async def replay() -> Any:
            nonlocal replayed
            if not replayed:
                replayed = True
                return {"type": "http.request", "body": body, "more_body": False}
            return await receive()

        await self.app(scope, replay, send)


def _search_server(json_response: bool) -> tuple[MCPServer, _Methods]:
    mcp = MCPServer("search")

    @mcp.tool()
    def search_nfcorpus(query: str, top_k: int = 5, include_text: bool = True) -> Hits:
        """Hits numbered from 1; the query "boom" fails; include_text=true is refused."""
        if query == "boom":
            raise ToolError("the index is on fire")
        if include_text:
            raise ToolError("this client should not ask for abstracts")
        return Hits(results=[Hit(doc_id=f"MED-{i}", score=1.0 / i) for i in range(1, top_k + 1)])

    app = mcp.streamable_http_app(stateless_http=True, json_response=json_response)
    return mcp, _Methods(app)


@pytest.fixture(params=[True, False], ids=["json", "sse"])
def mcp_url(request: pytest.FixtureRequest) -> Iterator[tuple[str, _Methods]]:
    _, app = _search_server(json_response=request.param)
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, args=([sock],), daemon=True)
    thread.start()
    while not server.started:
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}/mcp", app
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


def _client(url: str) -> McpSearchClient:
    return McpSearchClient(url, timeout_s=5, retries=0, backoff_s=0.01, max_connections=4)


async def test_one_negotiation_then_one_post_per_call(mcp_url: tuple[str, _Methods]) -> None:
    url, server = mcp_url
    client = _client(url)
    try:
        answers = await asyncio.gather(
            *(client.search(f"q{i}", 3, time.monotonic() + 5) for i in range(8))
        )
    finally:
        await client.aclose()
    assert all([c.doc_id for c in hits] == ["MED-1", "MED-2", "MED-3"] for hits in answers)
    assert server.seen == ["server/discover", "tools/list", *["tools/call"] * 8]


async def test_a_tool_error_fails_its_call_only(mcp_url: tuple[str, _Methods]) -> None:
    url, _ = mcp_url
    client = _client(url)
    try:
        with pytest.raises(McpCallError) as failed:
            await client.search("boom", 3, time.monotonic() + 5)
        hits = await client.search("fine", 2, time.monotonic() + 5)
    finally:
        await client.aclose()
    assert failed.value.reason == "mcp_tool_error"
    assert "the index is on fire" in str(failed.value)
    assert len(hits) == 2


async def test_an_answer_that_is_not_json_rpc_fails_its_call_only(
    mcp_url: tuple[str, _Methods],
) -> None:
    url, _ = mcp_url
    client = _client(url)
    try:
        with pytest.raises(McpCallError) as failed:
            await client.search(GARBAGE, 3, time.monotonic() + 5)
        hits = await client.search("fine", 2, time.monotonic() + 5)
    finally:
        await client.aclose()
    assert failed.value.reason == "mcp_bad_response"
    assert len(hits) == 2
