"""A request the frame answers itself, and how it answers: a JSON-RPC error or a JSON error.

Every guard is a :class:`Guard`: the app it guards and the paths whose refusals are JSON-RPC errors.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from typing import Any

from starlette.types import ASGIApp, Scope, Send

from services.common import jsonrpc


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
        headers: tuple[tuple[bytes, bytes], ...] = (),
    ) -> None:
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after
        self.request_id = request_id
        self.code = code  # a JSON-RPC error code of the protocol's own (else invalid request)
        self.headers = headers  # what the status needs said too (405's Allow)


#: Statuses whose request body was not read to its end: the connection cannot carry another.
UNREAD_BODY = frozenset({405, 408, 413, 415, 421, 403})


async def send_refusal(send: Send, refusal: Refusal, *, jsonrpc_path: bool) -> None:
    """Answer a refused request: a JSON-RPC error on a JSON-RPC path, else a JSON error.

    The status is the refusal's (a JSON-RPC error for a well-formed request with bad content is
    200, like any other), with ``Retry-After`` when the refusal says when to come back.
    """
    reason = str(refusal)
    body: dict[str, Any]
    if jsonrpc_path:
        default = jsonrpc.OVERLOADED if refusal.status == 503 else jsonrpc.INVALID_REQUEST
        code = refusal.code or default
        prefix = "invalid request: " if code == jsonrpc.INVALID_REQUEST else ""
        body = jsonrpc.error_response(refusal.request_id, code, prefix + reason)
        # A well-formed request with bad content is a JSON-RPC error like any other.
        status = 200 if refusal.status == 422 else refusal.status
    else:
        body = {"error": "invalid request", "detail": [{"field": "body", "message": reason}]}
        if refusal.status == 415:
            detail = [{"field": "content-type", "message": reason}]
            body = {"error": "unsupported media type", "detail": detail}
        if refusal.status in (403, 405, 421, 503):
            body = {"error": reason}
        status = refusal.status
    headers = [(b"content-type", b"application/json"), *refusal.headers]
    if refusal.retry_after is not None:
        headers.append((b"retry-after", str(refusal.retry_after).encode()))
    if refusal.status in UNREAD_BODY:
        headers.append((b"connection", b"close"))
    payload = json.dumps(body).encode()
    headers.append((b"content-length", str(len(payload)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": payload})


class Guard:
    """A guard's shape: the app it guards, and the paths whose refusals are JSON-RPC errors."""

    def __init__(self, app: ASGIApp, jsonrpc_paths: Collection[str]) -> None:
        """Guard ``app``; refusals on ``jsonrpc_paths`` are answered as JSON-RPC errors."""
        self._app = app
        self._jsonrpc = frozenset(jsonrpc_paths)

    async def _refuse(self, scope: Scope, send: Send, refusal: Refusal) -> None:
        await send_refusal(send, refusal, jsonrpc_path=scope["path"] in self._jsonrpc)
