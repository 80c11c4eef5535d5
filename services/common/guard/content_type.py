"""415 for a post to a JSON endpoint that is not ``Content-Type: application/json``.

A web page may POST ``text/plain`` (or a form) anywhere without asking first; only a
``Content-Type`` of ``application/json`` makes a browser ask the server (a CORS preflight),
which ours never allow. So a page cannot reach a JSON endpoint, on loopback or behind a
firewall, on a visitor's behalf. Decided from the head, before the body is read.
"""

from __future__ import annotations

from collections.abc import Collection

from starlette.types import ASGIApp, Receive, Scope, Send

from services.common.guard.refusal import Guard, Refusal
from services.common.header_values import header

#: The methods whose body a JSON endpoint reads.
BODY_METHODS = frozenset({"POST", "PUT", "PATCH"})


def not_json(scope: Scope, taker: str = "JSON-RPC") -> str | None:
    """Why a post's ``Content-Type`` is not JSON's, or None when it is (``taker``: who says so)."""
    value = header(scope, b"content-type")
    if value is None:
        return f"{taker} takes Content-Type: application/json, and the request has none"
    media = value.split(b";", 1)[0].strip().lower()
    if media == b"application/json":
        return None
    shown = media.decode("latin-1")[:60] or "an empty one"
    return f"{taker} takes Content-Type: application/json, not {shown}"


class JsonContentType(Guard):
    """ASGI middleware: bodies to ``jsonrpc_paths`` and posts to ``json_paths`` are JSON, or 415."""

    def __init__(
        self, app: ASGIApp, jsonrpc_paths: Collection[str] = (), json_paths: Collection[str] = ()
    ) -> None:
        """Guard ``app``'s JSON endpoints."""
        super().__init__(app, jsonrpc_paths)
        self._json = frozenset(json_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass on JSON (and whatever goes elsewhere); refuse another type."""
        if scope["type"] == "http" and scope["method"] in BODY_METHODS:
            path = scope["path"]
            problem = None
            if path in self._jsonrpc:
                problem = not_json(scope)
            elif path in self._json and scope["method"] == "POST":  # others: the route's 405
                problem = not_json(scope, f"POST {path}")
            if problem is not None:
                await self._refuse(scope, send, Refusal(415, problem))
                return
        await self._app(scope, receive, send)
