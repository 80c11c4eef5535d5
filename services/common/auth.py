"""Bearer-token authentication: optional, off for local runs, one middleware for every server.

A server with tokens answers every request without a valid ``Authorization: Bearer <token>``
with 401 and ``WWW-Authenticate: Bearer`` (on a JSON-RPC path, a JSON-RPC error whose code,
:data:`UNAUTHENTICATED`, is no other error's), except probes (the kubelet probes without
credentials) and the agent card (A2A clients read it to learn that a token is needed). Each token
names its caller (``name:token`` lines; a bare token gets a name derived from its hash); the name
becomes the request's user, which is what scopes A2A tasks to the caller that created them, and
labels the request's metrics and log line (``services.telemetry.http``), as does the scrape token's
name on ``/metrics``. A refusal is marked with its reason: no token, a token no one was given, or
a known token at the wrong door (it is named then); the token itself is never written anywhere.

``/metrics`` takes a token of its own, the scrape token (``<PREFIX>_METRICS_TOKEN[_FILE]``: what
the chart's ServiceMonitor sends), and nothing else: one token per purpose, so a caller's token
does not read the server's figures and the scraper's token reaches no endpoint but ``/metrics``.
With client tokens and no scrape token, ``/metrics`` answers 401 to everyone: a server that
requires callers to authenticate never publishes its figures by default. With no client tokens
(local runs) ``/metrics`` is open, unless a scrape token is set: then it needs that. A server
whose figures are public reads anyway lists ``/metrics`` among its public paths (the load
collector: its token guards who hands in reports, not who reads them): open until a scrape token
is set, as without client tokens.

Tokens are read, checked and read again on change by :mod:`services.common.tokens`; a server
takes the tokens of a changed file on its next request, unless they mix purposes.
"""

from __future__ import annotations

import hmac
import json
import logging
from collections.abc import Collection, Iterable, Mapping
from pathlib import Path
from typing import ClassVar

from pydantic import BaseModel, Field
from starlette.authentication import AuthCredentials, SimpleUser
from starlette.types import ASGIApp, Receive, Scope, Send

from services.common import jsonrpc
from services.common.header_values import header
from services.common.paths import METRICS, PROBES
from services.common.tokens import (
    TokenError,
    TokenSet,
    caller_label,
    distinct_purposes,
    one_token_per_purpose,
)
from services.telemetry.http import ANONYMOUS, AUTH_FAILURE, CALLER, SCRAPER, UNKNOWN

__all__ = ["UNAUTHENTICATED", "AuthFields", "BearerAuth", "bearer_token", "one_token_per_purpose"]

#: The JSON-RPC code of a 401 on a JSON-RPC path. JSON-RPC leaves -32000..-32099 to servers; A2A
#: numbers its own errors from -32001 up (1.0: -32001 task not found .. -32009) and MCP its
#: spec's from -32020 up, keeping -32000..-32019 for implementations. The far end of that band is
#: no error of either protocol now and the last A2A would reach.
UNAUTHENTICATED = -32019
_log = logging.getLogger(__name__)


class AuthFields(BaseModel):
    """Tokens a server may require: its callers' and its scraper's.

    ``<PREFIX>_AUTH_TOKENS[_FILE]``: the callers; ``<PREFIX>_METRICS_TOKEN[_FILE]``: the scrape
    token of ``/metrics``.
    """

    auth_tokens: str | None = Field(
        default=None,
        description="Accepted bearer tokens, comma-separated ('name:token' names the caller).",
    )
    auth_tokens_file: Path | None = Field(
        default=None, description="File of accepted tokens, one per line (a mounted Secret)."
    )
    metrics_token: str | None = Field(
        default=None,
        description="The scrape token /metrics requires (comma-separated to rotate).",
    )
    metrics_token_file: Path | None = Field(
        default=None, description="File of the scrape token, one per line (a mounted Secret)."
    )

    #: The name of a caller's token given without one; None: a name from its hash, each bare
    #: token a caller of its own (what scopes A2A tasks).
    unnamed_caller: ClassVar[str | None] = None

    def tokens(self) -> TokenSet:
        """Token -> caller name (its file read again on change); empty: authentication is off."""
        return TokenSet(self.auth_tokens, self.auth_tokens_file, unnamed=self.unnamed_caller)

    def metrics_tokens(self) -> TokenSet:
        """The scrape tokens ``/metrics`` accepts (token -> name); empty: none set."""
        # A scrape token is one caller's, the scraper's, however many are set to rotate: named
        # so on the request metrics unless its line names it.
        return TokenSet(self.metrics_token, self.metrics_token_file, unnamed=SCRAPER)

    def token_purposes(self) -> dict[str, Iterable[str]]:
        """The tokens of each purpose, by the settings that give them (see a server's own)."""
        prefix = str(self.model_config.get("env_prefix", ""))
        return {
            f"{prefix}AUTH_TOKENS[_FILE]": self.tokens(),
            f"{prefix}METRICS_TOKEN[_FILE]": self.metrics_tokens(),
        }

    def check_token_purposes(self) -> None:
        """Refuse one token value in two purposes (:func:`distinct_purposes`), at start."""
        distinct_purposes(self.token_purposes())


def bearer_token(scope: Scope) -> str | None:
    """The token of an ``Authorization: Bearer`` header, if the request has one."""
    value = header(scope, b"authorization")
    if value is None:
        return None
    scheme, _, token = value.decode("latin-1").partition(" ")
    return token.strip() if scheme.lower() == "bearer" and token.strip() else None


def _known(tokens: Mapping[str, str]) -> list[tuple[bytes, str]]:
    return [(token.encode(), name) for token, name in tokens.items()]


def _match(token: str | None, known: list[tuple[bytes, str]]) -> str | None:
    """The name of ``token`` among ``known``, compared in constant time; None if absent."""
    if token is None:
        return None
    given, found = token.encode(), None
    for candidate, name in known:  # compare with every token: no early exit to time
        if hmac.compare_digest(given, candidate):
            found = name
    return found


class BearerAuth:
    """ASGI middleware: 401 without a known token; the caller's name as the request's user.

    ``/metrics`` is checked against ``metrics_tokens`` only (see the module docstring).
    """

    def __init__(
        self,
        app: ASGIApp,
        tokens: Mapping[str, str],
        public_get_paths: Collection[str] = (),
        jsonrpc_paths: Collection[str] = (),
        metrics_tokens: Mapping[str, str] | None = None,
    ) -> None:
        """Check requests against ``tokens`` (token -> caller name), scrapes ``metrics_tokens``.

        Raises:
            TokenError: a scrape token is also a caller's.

        """
        metrics_tokens = metrics_tokens or {}
        one_token_per_purpose(tokens, metrics_tokens)
        self._app = app
        self._sources = (tokens, metrics_tokens)
        self._tokens = _known(tokens)
        self._metrics_tokens = _known(metrics_tokens)
        self._public_get = frozenset(public_get_paths)
        self._jsonrpc = frozenset(jsonrpc_paths)

    def _reload(self) -> None:
        """Take the tokens of a changed file (:class:`TokenSet`), unless they mix purposes."""
        changed = False
        for source in self._sources:
            if isinstance(source, TokenSet) and source.refresh():
                changed = True
        if not changed:
            return
        tokens, metrics_tokens = self._sources
        try:
            one_token_per_purpose(tokens, metrics_tokens)
        except TokenError as e:
            _log.error("%s: the tokens read before stay in use", e)
            return
        self._tokens = _known(tokens)
        self._metrics_tokens = _known(metrics_tokens)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Let public requests through; authenticate the others."""
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        self._reload()
        path, method = scope["path"], scope["method"]
        if path == METRICS:
            public = not self._tokens or METRICS in self._public_get
            if public and not self._metrics_tokens:
                await self._app(scope, receive, send)
                return
            token = bearer_token(scope)
            scraper = _match(token, self._metrics_tokens)
            if scraper is None:
                await self._unauthorized(scope, send, token, self._tokens)
                return
            scope[CALLER] = caller_label(scraper)
            await self._app(scope, receive, send)
            return
        public = path in PROBES or (method in ("GET", "HEAD") and path in self._public_get)
        if public or not self._tokens:  # no tokens: only a scrape token was set
            await self._app(scope, receive, send)
            return
        token = bearer_token(scope)
        caller = _match(token, self._tokens)
        if caller is None:
            await self._unauthorized(scope, send, token, self._metrics_tokens)
            return
        scope["user"] = SimpleUser(caller)
        scope["auth"] = AuthCredentials(["authenticated"])
        scope[CALLER] = caller_label(caller)
        await self._app(scope, receive, send)

    async def _unauthorized(
        self, scope: Scope, send: Send, token: str | None, other_purpose: list[tuple[bytes, str]]
    ) -> None:
        """Answer 401, and mark why for the request's metrics and log line.

        ``other_purpose``: the tokens of the purpose this path does not take, so a token sent to
        the wrong door is told apart (by its name) from one no one was given.
        """
        if token is None:
            scope[AUTH_FAILURE], scope[CALLER] = "missing", ANONYMOUS
        elif (name := _match(token, other_purpose)) is not None:
            scope[AUTH_FAILURE], scope[CALLER] = "wrong_purpose", caller_label(name)
        else:
            scope[AUTH_FAILURE], scope[CALLER] = "invalid", UNKNOWN
        if scope["path"] == METRICS:
            # One answer whatever was sent: it tells nobody whether a token is a caller's.
            message = "authentication required: /metrics takes Authorization: Bearer <scrape token>"
        elif token is not None:
            message = "authentication failed: the bearer token is not valid"
        else:
            message = "authentication required: send Authorization: Bearer <token>"
        body: object = {"error": message}
        if scope["path"] in self._jsonrpc:
            body = jsonrpc.error_response(None, UNAUTHENTICATED, message)
        payload = json.dumps(body).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"www-authenticate", b'Bearer realm="nfcorpus-retrieval"'),
            (b"content-length", str(len(payload)).encode()),
        ]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": payload})
