"""Header field values as RFC 9110 defines them (section 5.5): without surrounding whitespace.

uvicorn's httptools parser hands a value on with the spaces and tabs that follow it, where h11
strips them, and everything downstream compares values as it gets them: the MCP SDK refused
``Mcp-Name: search_nfcorpus `` (a trailing space) as not naming the body's tool, and the same
space after a bearer token or an ``A2A-Version`` would refuse a caller who sent nothing wrong.
The frame trims them once, before anything reads a header.
"""

from __future__ import annotations

from starlette.types import ASGIApp, Receive, Scope, Send

#: RFC 9110's optional whitespace (OWS): SP and HTAB, as bytes of the raw header value.
_OWS = b" \t"


def _untrimmed(value: bytes) -> bool:
    return bool(value) and (value[0] in _OWS or value[-1] in _OWS)


class TrimmedHeaderValues:
    """ASGI middleware: each header value of a request without leading or trailing SP or HTAB."""

    def __init__(self, app: ASGIApp) -> None:
        """Trim the header values of the requests ``app`` serves."""
        self._app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on with its header values trimmed (a new list only when needed)."""
        if scope["type"] == "http" and any(_untrimmed(v) for _, v in scope["headers"]):
            scope["headers"] = [(name, value.strip(_OWS)) for name, value in scope["headers"]]
        await self._app(scope, receive, send)


def header(scope: Scope, name: bytes) -> bytes | None:
    """The value of the request's first ``name`` header (a lower-case name), or None.

    Every middleware of the frame reads a header through here: ASGI hands headers over as a list
    of raw pairs, and a dictionary of them all would cost each request more than one look.
    """
    for key, value in scope["headers"]:
        if key == name:
            return bytes(value)
    return None
