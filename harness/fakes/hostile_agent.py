"""An A2A participant that answers as an attacker would, on loopback, counting what it is sent.

Its card is an honest one (our purple agent's, naming the URL it was reached at), so the
evaluator gets as far as asking; what it does with each ``POST`` is its :attr:`Hostile.mode`:

- ``endless``: a JSON answer that never ends, chunk after chunk for as long as anyone reads;
- ``trickle``: one byte every :attr:`Hostile.trickle_s`, for ever;
- ``hold``: nothing until the caller hangs up (an agent that never answers);
- ``shout``: at once, a failed task whose status text is :attr:`Hostile.shout_chars` long.

:attr:`Hostile.posts` counts the messages received, :attr:`Hostile.open` the answers still
going (an endless or trickled one ends when its reader closes the connection), and
:attr:`Hostile.sent` the bytes of answer written. Serve it with
:func:`harness.fakes.mcp_toy.serve_app`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Literal

from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from services.purple_agent.a2a.card import build_card
from services.purple_agent.settings import PurpleSettings

Mode = Literal["endless", "trickle", "hold", "shout"]
CHUNK = b" " * (64 << 10)  # JSON allows any amount of white space before a value


class Hostile:
    """The participant's behaviour and what it saw; :attr:`app` is its ASGI app."""

    def __init__(self, mode: Mode = "hold") -> None:
        """Answer every message as ``mode`` says (it can be changed between assessments)."""
        self.mode: Mode = mode
        self.trickle_s = 0.2
        self.shout_chars = 100_000
        self.posts = 0
        self.open = 0
        self.sent = 0
        self.app = Starlette(
            routes=[
                Route("/", self._card, methods=["GET"]),
                Route("/.well-known/agent-card.json", self._card, methods=["GET"]),
                Route("/", self._message, methods=["POST"]),
            ]
        )

    async def _card(self, request: Request) -> Response:
        card = build_card(PurpleSettings(card_url=str(request.base_url)))
        return JSONResponse(agent_card_to_dict(card))

    async def _message(self, request: Request) -> Response:
        body = await request.json()
        self.posts += 1
        if self.mode == "shout":
            text = "x" * self.shout_chars
            return JSONResponse(_failed_task(body.get("id"), body.get("method"), text))
        return StreamingResponse(self._stream(), media_type="application/json")

    async def _stream(self) -> AsyncIterator[bytes]:
        self.open += 1
        try:
            while True:
                if self.mode == "endless":
                    chunk = CHUNK
                    await asyncio.sleep(0)  # let the disconnect be noticed
                elif self.mode == "trickle":
                    chunk = b" "
                    await asyncio.sleep(self.trickle_s)
                else:  # hold: say nothing
                    await asyncio.sleep(3600)
                    continue
                self.sent += len(chunk)
                yield chunk
        finally:
            self.open -= 1


def _failed_task(request_id: object, method: object, text: str) -> dict[str, object]:
    """The answer to a 1.0 ``SendMessage`` or 0.3 ``message/send``: a failed task saying ``text``."""
    if method == "SendMessage":
        message = {"role": "ROLE_AGENT", "messageId": "m", "parts": [{"text": text}]}
        status = {"state": "TASK_STATE_FAILED", "message": message}
        result: dict[str, object] = {"task": {"id": "t", "contextId": "c", "status": status}}
    else:
        parts = [{"kind": "text", "text": text}]
        message = {"kind": "message", "messageId": "m", "role": "agent", "parts": parts}
        status = {"state": "failed", "message": message}
        result = {"kind": "task", "id": "t", "contextId": "c", "status": status}
    return {"jsonrpc": "2.0", "id": request_id, "result": result}
