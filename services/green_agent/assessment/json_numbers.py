"""Counts stay integers on the wire: the whole numbers of a data part are written as integers.

The a2a-sdk carries a data part as a protobuf ``Value``, whose numbers are doubles, and Python's
protobuf JSON printer writes every double with a point: ``"total_queries": 323.0``. The public
NFCorpus evaluator (a2a-sdk 0.3, plain JSON) sends ``323``, and a leaderboard that types what it
reads (DuckDB's ``read_json_auto``) sees a count as an integer only then. :class:`WholeNumbers`
rewrites the answers of the JSON-RPC paths it is given, plain JSON and server-sent events alike:
in the ``data`` of every part, a number without a fractional part is written as an integer. JSON
has one number type, so no value changes (the ProtoJSON printers of Go and Java write them so).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from starlette.datastructures import MutableHeaders
from starlette.types import ASGIApp, Message, Receive, Scope, Send


def whole_numbers(value: Any) -> Any:
    """``value`` with every float that is a whole number made an int (bools and others kept)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: whole_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [whole_numbers(v) for v in value]
    return value


def in_data_parts(message: Any) -> Any:
    """``message`` (a JSON-RPC answer) with :func:`whole_numbers` applied to each part's data."""
    if isinstance(message, list):
        return [in_data_parts(v) for v in message]
    if not isinstance(message, dict):
        return message
    out = {}
    for key, value in message.items():
        if key == "parts" and isinstance(value, list):
            value = [_part(p) for p in value]
        out[key] = in_data_parts(value)
    return out


def _part(part: Any) -> Any:
    if isinstance(part, dict) and "data" in part:
        return {**part, "data": whole_numbers(part["data"])}
    return part


def _rewrite_json(body: bytes) -> bytes:
    try:
        message = json.loads(body)
    except ValueError:  # not ours to fix
        return body
    return json.dumps(in_data_parts(message), ensure_ascii=False, separators=(",", ":")).encode()


def _rewrite_lines(lines: bytes) -> bytes:
    """Complete lines of server-sent events, their ``data:`` lines rewritten, endings kept."""
    out = []
    for line in lines.splitlines(keepends=True):
        if line.startswith(b"data:"):
            payload = line[5:].rstrip(b"\r\n")
            line = b"data: " + _rewrite_json(payload.strip()) + line[5 + len(payload) :]
        out.append(line)
    return b"".join(out)


class WholeNumbers:
    """ASGI middleware: :func:`in_data_parts` on the JSON and event-stream answers of ``paths``."""

    def __init__(self, app: ASGIApp, paths: Collection[str]) -> None:
        """Wrap ``app``; answers on other paths pass as they are."""
        self._app = app
        self._paths = frozenset(paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on; rewrite the answer's body on the way out."""
        if scope["type"] != "http" or scope["path"] not in self._paths:
            await self._app(scope, receive, send)
            return
        kind = ""
        start: Message | None = None
        held = b""

        async def rewriting(message: Message) -> None:
            nonlocal kind, start, held
            if message["type"] == "http.response.start":
                headers = MutableHeaders(scope=message)
                content_type = headers.get("content-type", "")
                kind = (
                    "events"
                    if content_type.startswith("text/event-stream")
                    else ("json" if content_type.startswith("application/json") else "")
                )
                if kind != "json":
                    await send(message)
                else:  # sent with the rewritten body's length
                    start = message
                return
            if message["type"] != "http.response.body" or not kind:
                await send(message)
                return
            held += message.get("body", b"")
            more = message.get("more_body", False)
            if kind == "json":
                if more:
                    return
                body, held = _rewrite_json(held), b""
                assert start is not None
                headers = MutableHeaders(scope=start)
                headers["content-length"] = str(len(body))
                await send(start)
                await send({"type": "http.response.body", "body": body, "more_body": False})
                return
            # Events: pass on every complete line at once, hold an incomplete one.
            cut = held.rfind(b"\n") + 1 if more else len(held)
            ready, held = held[:cut], held[cut:]
            if ready or not more:
                body = _rewrite_lines(ready)
                await send({"type": "http.response.body", "body": body, "more_body": more})

        await self._app(scope, receive, rewriting)
