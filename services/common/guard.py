"""Admission and body checks in front of every route: overload, size, time, nesting, bad text.

A request is refused before the server works on it when the process already works on
``max_in_flight`` requests (503 with ``Retry-After``), when its body is larger than
``max_body_bytes`` (413, decided from ``Content-Length`` before reading, or as soon as a streamed
body passes the limit), when the body does not arrive within ``body_timeout_s`` (408), when a post
to a JSON-RPC path is not ``Content-Type: application/json`` (415: what keeps web pages out), and
when a JSON body nests deeper than ``max_json_depth`` or holds a lone UTF-16 surrogate, which no
downstream library handles gracefully (the JSON decoder overflows its stack on deep nesting, and
protobuf and UTF-8 encoders raise on surrogates). Bodies that are not JSON at all pass through:
each endpoint says itself what it expected.

JSON-RPC endpoints (A2A, MCP) get a JSON-RPC error; other endpoints a JSON error naming the
problem. Probes are never refused. ``/metrics`` has a small bound of its own
(:data:`METRICS_IN_FLIGHT`) instead of ``max_in_flight``: a scrape still gets through while the
server is saturated, which is when its figures matter most, yet a flood of scrapes (each answer
held in memory until a slow reader takes it) cannot grow without limit.

On a JSON-RPC path the envelope is checked first (:func:`envelope_problem`): both SDKs validate it
with pydantic and answer a wrong one with the validation dump (echoing the input) or, for a
``method`` that is a list, with an HTTP 500, so each protocol sees only well-formed envelopes and
then its own rules (``body_checks``); the protocols describe their own validation errors with
:func:`services.common.validation.describe`, which never echoes input. The purple agent holds a
query to the same text rule (:func:`has_lone_surrogate`): a message's JSON text may escape one.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Collection, Mapping
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from services.common.disconnect import run_until_disconnect
from services.common.limits import ServerLimits
from services.telemetry.http import ABANDONED, PROBE_PATHS

#: A protocol's own rule on a decoded JSON body and the request's headers (lower-case names):
#: what is wrong with it, or None. A check that needs its own JSON-RPC error code raises
#: :class:`Refusal` with ``code``.
BodyCheck = Callable[[Any, Mapping[str, str]], str | None]
INVALID_REQUEST = -32600
OVERLOADED = -32000  # JSON-RPC "server error" range
METRICS_PATH = "/metrics"
#: Paths admitted without any bound: the kubelet's probes, answered from memory.
EXEMPT_PATHS = PROBE_PATHS - {METRICS_PATH}
#: Scrapes one process serves at once: a Prometheus pair scraping the same target, and room for
#: a person or a test reading it too; more get 503 with ``Retry-After``.
METRICS_IN_FLIGHT = 4


class ClientGone(Exception):
    """The client disconnected before its request body was complete."""


class Refusal(Exception):
    """A request the guard answers itself (``request_id``: the JSON-RPC id, when one was read)."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        retry_after: int | None = None,
        request_id: object = None,
        code: int | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.request_id = request_id
        self.code = code  # a JSON-RPC error code of the protocol's own (else invalid request)


LONE_SURROGATE = "holds a lone UTF-16 surrogate (an unpaired \\ud800-\\udfff escape)"


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


def envelope_problem(payload: Any) -> str | None:
    """What is wrong with a decoded JSON-RPC request (or response) envelope, or None."""
    if not isinstance(payload, dict):
        return "a JSON-RPC message must be an object (batches are not accepted)"
    if payload.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    request_id = payload.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int | None):
        return "id must be a string, an integer or null"
    if "method" not in payload:
        # A client may answer a server's request (MCP); then it carries a result or an error.
        return None if "result" in payload or "error" in payload else "method is required"
    if not isinstance(payload["method"], str):
        return "method must be a string"
    if not isinstance(payload.get("params", {}), dict):
        return "params must be an object"
    return None


def check_json_body(
    body: bytes,
    max_depth: int,
    extra: BodyCheck | None = None,
    headers: Mapping[str, str] | None = None,
) -> None:
    """Raise :class:`Refusal` (422) for an unacceptable JSON body.

    Bodies that are not JSON at all are not judged here (each endpoint answers that itself),
    unless they are not even UTF-8 text.
    ``extra`` adds the endpoint's protocol rules (run on JSON that passed the generic ones).
    """
    try:
        # Decoded here once (a BOM allowed, as json.loads allows it), not guessed as UTF-16/32
        # by json.loads, which fails inside the SDK.
        text = body.decode("utf-8").removeprefix("\ufeff")
    except UnicodeDecodeError as e:
        raise Refusal(422, f"the body is not UTF-8 text (byte {e.start}); JSON must be") from None
    if not text.strip():
        return
    try:
        value = json.loads(text)
    except RecursionError:
        raise Refusal(422, f"JSON nested deeper than {max_depth} levels") from None
    except json.JSONDecodeError:
        return
    except ValueError as e:  # valid JSON Python will not hold: an integer of 4,300+ digits
        raise Refusal(422, f"the body holds a number Python cannot read ({e})") from None
    request_id = value.get("id") if isinstance(value, dict) else None
    problem = None if plainly_acceptable(text, max_depth) else json_problem(value, max_depth)
    try:
        if problem is None and extra is not None:
            problem = extra(value, headers or {})
    except Refusal as refusal:
        refusal.request_id = request_id
        raise
    if problem is not None:
        raise Refusal(422, problem, request_id=request_id)


def _envelope_then(then: BodyCheck | None) -> BodyCheck:
    if then is None:
        return lambda value, _: envelope_problem(value)
    return lambda value, headers: envelope_problem(value) or then(value, headers)


def not_json(scope: Scope, taker: str = "JSON-RPC") -> str | None:
    """Why a post's ``Content-Type`` is not JSON's, or None when it is (``taker``: who says so).

    A web page may POST ``text/plain`` (or a form) anywhere without asking first; only a
    ``Content-Type`` of ``application/json`` makes a browser ask the server (a CORS preflight),
    which ours never allow. So a page cannot reach a JSON endpoint, on loopback or behind a
    firewall, on a visitor's behalf.
    """
    for name, value in scope["headers"]:
        if name == b"content-type":
            media = value.split(b";", 1)[0].strip().lower()
            if media == b"application/json":
                return None
            shown = media.decode("latin-1")[:60] or "an empty one"
            return f"{taker} takes Content-Type: application/json, not {shown}"
    return f"{taker} takes Content-Type: application/json, and the request has none"


def _declared_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None


class RequestGuard:
    """ASGI middleware applying :class:`~services.common.limits.ServerLimits` to each request."""

    def __init__(
        self,
        app: ASGIApp,
        limits: ServerLimits,
        jsonrpc_paths: Collection[str] = (),
        body_checks: Mapping[str, BodyCheck] | None = None,
        json_paths: Collection[str] = (),
    ) -> None:
        """Guard ``app``; ``jsonrpc_paths`` answer refusals as JSON-RPC errors.

        ``body_checks`` adds a protocol's rules for the JSON bodies of one path. POSTs to
        ``json_paths`` (and bodies to ``jsonrpc_paths``) must be ``application/json`` (415).
        """
        self._app = app
        self._limits = limits
        self._jsonrpc = frozenset(jsonrpc_paths)
        self._json = frozenset(json_paths)
        checks = dict(body_checks or {})
        # Every JSON-RPC path checks the envelope first, then the protocol's own rules.
        self._body_checks = {path: _envelope_then(checks.get(path)) for path in self._jsonrpc} | {
            path: check for path, check in checks.items() if path not in self._jsonrpc
        }
        self.in_flight = 0
        self.metrics_in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Admit, check and pass on one request, or refuse it."""
        if scope["type"] != "http" or scope["path"] in EXEMPT_PATHS:
            await self._app(scope, receive, send)
            return
        if scope["path"] == METRICS_PATH:
            await self._scrape(scope, receive, send)
            return
        limits = self._limits
        if self.in_flight >= limits.max_in_flight:
            message = f"overloaded: {limits.max_in_flight} requests in progress, retry shortly"
            await self._refuse(scope, send, Refusal(503, message, retry_after=limits.retry_after_s))
            return
        self.in_flight += 1
        try:
            if scope["method"] in ("POST", "PUT", "PATCH"):
                try:
                    body = await self._checked_body(scope, receive)
                except Refusal as refusal:
                    await self._refuse(scope, send, refusal)
                    return
                except ClientGone:  # before its body was complete: nobody to work for
                    scope[ABANDONED] = True
                    return
                await run_until_disconnect(self._app, scope, receive, send, body)
                return
            await self._app(scope, receive, send)
        finally:
            self.in_flight -= 1

    async def _scrape(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve ``/metrics`` within its own bound, :data:`METRICS_IN_FLIGHT`."""
        if self.metrics_in_flight >= METRICS_IN_FLIGHT:
            message = f"overloaded: {METRICS_IN_FLIGHT} scrapes in progress, retry shortly"
            retry = self._limits.retry_after_s
            await self._refuse(scope, send, Refusal(503, message, retry_after=retry))
            return
        self.metrics_in_flight += 1
        try:
            await self._app(scope, receive, send)
        finally:
            self.metrics_in_flight -= 1

    async def _checked_body(self, scope: Scope, receive: Receive) -> bytes:
        """Read the whole body within the limits and check it."""
        if (problem := self._not_json(scope)) is not None:
            raise Refusal(415, problem)
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
                    size += len(chunk)
                    if size > limit:
                        raise Refusal(413, f"request body is over the {limit}-byte limit")
                    chunks.append(chunk)
                    more = message.get("more_body", False)
        except TimeoutError:
            timeout = self._limits.body_timeout_s
            raise Refusal(408, f"request body not received within {timeout:g} s") from None
        body = b"".join(chunks)
        check = self._body_checks.get(scope["path"])
        headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]}
        check_json_body(body, self._limits.max_json_depth, check, headers)
        return body

    def _not_json(self, scope: Scope) -> str | None:
        """Why a post to a JSON path is not JSON (checked before its body is read), or None."""
        path = scope["path"]
        if path in self._jsonrpc:
            return not_json(scope)
        if path in self._json and scope["method"] == "POST":  # other methods: the route's 405
            return not_json(scope, f"POST {path}")
        return None

    async def _refuse(self, scope: Scope, send: Send, refusal: Refusal) -> None:
        await send_refusal(send, refusal, jsonrpc=scope["path"] in self._jsonrpc)


async def send_refusal(send: Send, refusal: Refusal, *, jsonrpc: bool) -> None:
    """Answer a refused request: a JSON-RPC error on a JSON-RPC path, else a JSON error.

    The status is the refusal's (a JSON-RPC error for a well-formed request with bad content is
    200, like any other), with ``Retry-After`` when the refusal says when to come back.
    """
    reason = str(refusal)
    if jsonrpc:
        code = refusal.code or (OVERLOADED if refusal.status == 503 else INVALID_REQUEST)
        prefix = "invalid request: " if code == INVALID_REQUEST else ""
        error = {"code": code, "message": prefix + reason}
        request_id = refusal.request_id if isinstance(refusal.request_id, str | int) else None
        body: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id, "error": error}
        # A well-formed request with bad content is a JSON-RPC error like any other.
        status = 200 if refusal.status == 422 else refusal.status
    else:
        body = {"error": "invalid request", "detail": [{"field": "body", "message": reason}]}
        if refusal.status == 415:
            detail = [{"field": "content-type", "message": reason}]
            body = {"error": "unsupported media type", "detail": detail}
        if refusal.status == 503:
            body = {"error": reason}
        status = refusal.status
    headers = [(b"content-type", b"application/json")]
    if refusal.retry_after is not None:
        headers.append((b"retry-after", str(refusal.retry_after).encode()))
    if refusal.status in (408, 413, 415):  # the body was not read to its end
        headers.append((b"connection", b"close"))
    payload = json.dumps(body).encode()
    headers.append((b"content-length", str(len(payload)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})
