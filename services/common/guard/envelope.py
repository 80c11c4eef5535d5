"""The JSON-RPC envelope of a body posted to a JSON-RPC path, then the protocol's own rules.

Both SDKs validate the envelope with pydantic and answer a wrong one with the validation dump
(echoing the input) or, for a ``method`` that is a list, with an HTTP 500, so each protocol sees
only well-formed envelopes (:func:`services.common.jsonrpc.envelope_problem`) and then its own
rules (``body_checks``: a protocol's check of the decoded body and the request's headers); the
protocols describe their own validation errors with :func:`services.common.validation.describe`,
which never echoes input. A body that is not JSON at all passes: the SDK answers a parse error.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

from services.common.guard.body import DECODED
from services.common.guard.refusal import Guard, Refusal
from services.common.jsonrpc import envelope_problem, request_id

#: A protocol's own rule on a decoded JSON body and the request's headers (lower-case names):
#: what is wrong with it, or None. A check that needs its own JSON-RPC error code raises
#: :class:`~services.common.guard.refusal.Refusal` with ``code``.
BodyCheck = Callable[[Any, Mapping[str, str]], str | None]


class JsonRpcEnvelope(Guard):
    """ASGI middleware: a JSON-RPC body with a bad envelope, or breaking a protocol rule, is refused."""

    def __init__(
        self,
        app: ASGIApp,
        jsonrpc_paths: Collection[str],
        body_checks: Mapping[str, BodyCheck] | None = None,
    ) -> None:
        """Check the bodies posted to ``jsonrpc_paths`` (and ``body_checks``' own paths)."""
        super().__init__(app, jsonrpc_paths)
        self._checks = dict(body_checks or {})

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass on a well-formed body; refuse another (a JSON-RPC error on a JSON-RPC path)."""
        if scope["type"] == "http" and DECODED in scope:
            path = scope["path"]
            check = self._checks.get(path)
            if path in self._jsonrpc or check is not None:
                value = scope[DECODED]
                refused_id = request_id(value)
                try:
                    problem = envelope_problem(value) if path in self._jsonrpc else None
                    if problem is None and check is not None:
                        headers = {
                            k.decode("latin-1"): v.decode("latin-1") for k, v in scope["headers"]
                        }
                        problem = check(value, headers)
                except Refusal as refusal:
                    refusal.request_id = refused_id
                    await self._refuse(scope, send, refusal)
                    return
                if problem is not None:
                    await self._refuse(scope, send, Refusal(422, problem, request_id=refused_id))
                    return
        await self._app(scope, receive, send)
