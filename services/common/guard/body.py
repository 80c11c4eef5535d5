"""Every request body read whole before any route or SDK sees it: bounded in size and time.

A request carries a body when its method is POST, PUT or PATCH, or its head declares one
(``Content-Length`` above 0, or ``Transfer-Encoding``), whatever the method: a body promised and
never sent must not hold a server that only meant to answer 405 or 404. The body is refused with
413 when it is larger than ``max_body_bytes`` (decided from ``Content-Length`` before reading, or
as soon as a streamed body passes the limit) and with 408 when it does not arrive within
``body_timeout_s``. The bytes held by bodies still arriving are bounded together too
(``max_in_flight`` bodies' worth: 503 beyond), so connections trickling large bodies cannot hold
more memory than the requests the server works on at once; a body that sends nothing holds
nothing.

A JSON body is decoded once here and refused (422) when it nests deeper than
``max_json_depth`` or holds a lone UTF-16 surrogate, which no downstream library handles
gracefully (the JSON decoder overflows its stack on deep nesting, and protobuf and UTF-8 encoders
raise on surrogates). Bodies that are not JSON at all pass through: each endpoint says itself
what it expected. The decoded value is kept in the scope (:data:`DECODED`) for the JSON-RPC
envelope's check. The request then runs until its client disconnects
(:mod:`services.common.disconnect`).
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Collection
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from services.common.disconnect import run_until_disconnect
from services.common.guard.content_type import BODY_METHODS
from services.common.guard.refusal import Guard, Refusal
from services.common.header_values import header
from services.common.jsonrpc import request_id
from services.common.limits import ServerLimits
from services.telemetry.http import ABANDONED

#: Scope key of the decoded JSON body, when the body is JSON (absent otherwise).
DECODED = "nfcorpus.json"
LONE_SURROGATE = "holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape)"


class ClientGone(Exception):
    """The client disconnected before its request body was complete."""


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a surrogate JSON let through: no UTF-8 encoder can write it."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def json_problem(value: Any, max_depth: int) -> str | None:
    """What makes a decoded JSON value unacceptable (too deep, lone surrogates), or None."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict | list):
            if depth > max_depth:
                return f"JSON nested deeper than {max_depth} levels"
            children = [*item.keys(), *item.values()] if isinstance(item, dict) else item
            stack.extend((child, depth + 1) for child in children)
        elif isinstance(item, str) and has_lone_surrogate(item):
            return f"text {LONE_SURROGATE}"
    return None


def plainly_acceptable(text: str, max_depth: int) -> bool:
    r"""Whether JSON ``text`` cannot decode to a value :func:`json_problem` refuses, by its text.

    Each level of nesting opens a bracket, so a text with at most ``max_depth`` of them (counted
    inside strings too) is not too deep; a lone surrogate needs a ``\u`` escape or a
    non-ASCII character. Most requests pass this scan in C and skip walking the decoded value.
    """
    return text.isascii() and "\\u" not in text and text.count("{") + text.count("[") <= max_depth


#: What :func:`decode_json` gives for a body that is not JSON (the endpoint answers it).
NOT_JSON = object()


def decode_json(body: bytes, max_depth: int) -> Any:
    """The decoded JSON body, or :data:`NOT_JSON`; :class:`Refusal` (422) when unacceptable.

    Bodies that are not JSON at all are not judged here, unless they are not even UTF-8 text.
    """
    try:
        # Decoded here once (a BOM allowed, as json.loads allows it), not guessed as UTF-16/32
        # by json.loads, which fails inside the SDK.
        text = body.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise Refusal(422, f"the body is not UTF-8 text (byte {e.start}); JSON must be") from None
    if not text.strip():
        return NOT_JSON
    try:
        value = json.loads(text)
    except RecursionError:
        raise Refusal(422, f"JSON nested deeper than {max_depth} levels") from None
    except json.JSONDecodeError:
        return NOT_JSON
    except ValueError as e:  # valid JSON Python will not hold: an integer of 4,300+ digits
        raise Refusal(422, f"the body holds a number Python cannot read ({e})") from None
    problem = None if plainly_acceptable(text, max_depth) else json_problem(value, max_depth)
    if problem is not None:
        raise Refusal(422, problem, request_id=request_id(value))
    return value


def carries_body(scope: Scope) -> bool:
    """Whether the request has a body to read (see the module docstring)."""
    if scope["method"] in BODY_METHODS:
        return True
    length = header(scope, b"content-length")
    return (length is not None and length.strip() not in (b"", b"0")) or (
        header(scope, b"transfer-encoding") is not None
    )


def _declared_length(scope: Scope) -> int | None:
    value = header(scope, b"content-length")
    if value is None:
        return None
    try:
        return int(value)
    except ValueError:
        return None


class BoundedBody(Guard):
    """ASGI middleware: the body read whole within the limits, checked, then replayed."""

    def __init__(
        self, app: ASGIApp, limits: ServerLimits, jsonrpc_paths: Collection[str] = ()
    ) -> None:
        """Read the bodies of ``app``'s requests within ``limits``."""
        super().__init__(app, jsonrpc_paths)
        self._limits = limits
        self._budget = limits.max_in_flight * limits.max_body_bytes
        self.held = 0  # bytes of bodies still arriving, all requests together

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Read, check and pass on a request's body; refuse one out of bounds."""
        if scope["type"] != "http" or not carries_body(scope):
            await self._app(scope, receive, send)
            return
        try:
            body = await self._read(scope, receive)
            if body:
                value = decode_json(body, self._limits.max_json_depth)
                if value is not NOT_JSON:
                    scope[DECODED] = value
        except Refusal as refusal:
            await self._refuse(scope, send, refusal)
            return
        except ClientGone:  # before its body was complete: nobody to work for
            scope[ABANDONED] = True
            return
        await run_until_disconnect(self._app, scope, receive, send, body)

    async def _read(self, scope: Scope, receive: Receive) -> bytes:
        limit = self._limits.max_body_bytes
        declared = _declared_length(scope)
        if declared is not None and declared > limit:
            raise Refusal(413, f"request body of {declared} bytes is over the {limit}-byte limit")
        chunks: list[bytes] = []
        size = 0
        try:
            async with asyncio.timeout(self._limits.body_timeout_s):
                more = True
                while more:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        raise ClientGone
                    chunk = message.get("body", b"")
                    if size + len(chunk) > limit:
                        raise Refusal(413, f"request body is over the {limit}-byte limit")
                    if chunk and self.held + len(chunk) > self._budget:
                        retry = self._limits.retry_after_s
                        message_text = "overloaded: too many request bodies arriving, retry shortly"
                        close = ((b"connection", b"close"),)  # the body is left unread
                        raise Refusal(503, message_text, retry_after=retry, headers=close)
                    size += len(chunk)
                    self.held += len(chunk)
                    chunks.append(chunk)
                    more = message.get("more_body", False)
        except TimeoutError:
            timeout = self._limits.body_timeout_s
            raise Refusal(408, f"request body not received within {timeout:g} s") from None
        finally:
            self.held -= size
        return chunks[0] if len(chunks) == 1 else b"".join(chunks)
