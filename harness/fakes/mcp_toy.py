"""A real MCP server of the SDK with a toy search tool, on loopback, recording what it is sent.

It stands in for servers other than ours: the purple agent's client is tested against the
SDK's own server, answering JSON or SSE, and (``handshake_only``) against one that knows only
the initialize handshake.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import uvicorn
from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from pydantic import BaseModel
from starlette.types import ASGIApp, Receive, Scope, Send

#: A query the server answers with JSON that is no JSON-RPC response.
GARBAGE = "garbage please"
JSON = [(b"content-type", b"application/json")]


class ToyHit(BaseModel):
    """One result of the toy tool."""

    doc_id: str
    score: float


class ToyResults(BaseModel):
    """The toy tool's answer, shaped as ``search_nfcorpus`` answers."""

    results: list[ToyHit]


@dataclass
class Seen:
    """One POST as the server received it."""

    headers: dict[str, str]
    body: dict[str, Any]


class Recorder:
    """ASGI wrapper recording every POST.

    ``handshake_only`` refuses ``server/discover`` as a server of the handshake era does (method
    not found).
    """

    def __init__(self, app: ASGIApp, handshake_only: bool = False) -> None:
        self.app = app
        self.handshake_only = handshake_only
        self.posts: list[Seen] = []

    @property
    def seen(self) -> list[str]:
        """The JSON-RPC method of every POST, in order."""
        return [p.body.get("method", "") for p in self.posts]

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Record a POST's headers and body, then hand it to the wrapped app."""
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
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        self.posts.append(Seen(headers, request))
        if self.handshake_only and request.get("method") == "server/discover":
            error = {"code": -32601, "message": "Method not found"}
            answer = {"jsonrpc": "2.0", "id": request["id"], "error": error}
            await send({"type": "http.response.start", "status": 200, "headers": JSON})
            await send({"type": "http.response.body", "body": json.dumps(answer).encode()})
            return
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


def search_app(json_response: bool, handshake_only: bool = False) -> Recorder:
    """The SDK's MCP server with the toy ``search_nfcorpus`` tool, answering JSON or SSE."""
    mcp = MCPServer("search")

    @mcp.tool()
    def search_nfcorpus(query: str, top_k: int = 5, include_text: bool = True) -> ToyResults:
        """ToyResults numbered from 1; the query "boom" fails; include_text=true is refused."""
        if query == "boom":
            raise ToolError("the index is on fire")
        if include_text:
            raise ToolError("this client should not ask for abstracts")
        return ToyResults(
            results=[ToyHit(doc_id=f"MED-{i}", score=1.0 / i) for i in range(1, top_k + 1)]
        )

    app = mcp.streamable_http_app(stateless_http=True, json_response=json_response)
    return Recorder(app, handshake_only)


@contextmanager
def serve_app(app: ASGIApp, port: int = 0) -> Iterator[str]:
    """Serve any ASGI app on a loopback port (``0``: a free one); yields its base URL."""
    sock = socket.socket()
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # a port just freed, taken again
    sock.bind(("127.0.0.1", port))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="on"))
    thread = threading.Thread(target=server.run, args=([sock],), daemon=True)
    thread.start()
    while not server.started:
        if not thread.is_alive():
            raise RuntimeError("the server did not start")
        time.sleep(0.01)
    try:
        yield f"http://127.0.0.1:{sock.getsockname()[1]}"
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()


@contextmanager
def serving(app: Recorder, port: int = 0) -> Iterator[str]:
    """Serve ``app`` on a loopback port; yields its MCP endpoint's URL."""
    with serve_app(app, port) as base:
        yield base + "/mcp"
