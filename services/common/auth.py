"""Bearer-token authentication: optional, off for local runs, one middleware for every server.

A server with tokens answers every request without a valid ``Authorization: Bearer <token>``
with 401, except probes, ``/metrics`` (the cluster scrapes and probes them without credentials)
and the agent card (A2A clients read it to learn that a token is needed). Each token names its
caller (``name:token`` lines; a bare token gets a name derived from its hash); the name becomes
the request's user, which is what scopes A2A tasks to the caller that created them.

Tokens come from a file (one per line, ``#`` comments; the chart mounts a Secret there) and/or
an environment variable (comma-separated). Short tokens and placeholders are refused at start.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Collection, Mapping
from pathlib import Path

from pydantic import BaseModel, Field
from starlette.authentication import AuthCredentials, SimpleUser
from starlette.types import ASGIApp, Receive, Scope, Send

from services.common.guard import EXEMPT_PATHS

MIN_TOKEN_CHARS = 16
PLACEHOLDERS = ("changeme", "changethis", "secret", "token", "password", "example")


class TokenError(ValueError):
    """A configured token is unusable; the message never shows the token."""


def _caller(line: str, where: str) -> tuple[str, str]:
    name, _, token = line.rpartition(":")
    token = token.strip()
    if len(token) < MIN_TOKEN_CHARS:
        raise TokenError(f"a token in {where} is shorter than {MIN_TOKEN_CHARS} characters")
    if token.lower() in PLACEHOLDERS or token.lower().startswith(("changeme", "changethis")):
        raise TokenError(f"a token in {where} is a placeholder: generate a random one")
    digest = hashlib.sha256(token.encode()).hexdigest()[:12]
    return token, name.strip() or f"client-{digest}"


def load_tokens(inline: str | None, path: Path | None) -> dict[str, str]:
    """Token -> caller name, from ``inline`` (comma-separated) and the lines of ``path``."""
    tokens: dict[str, str] = {}
    sources: list[tuple[str, list[str]]] = []
    if inline:
        sources.append(("the token variable", inline.split(",")))
    if path is not None:
        try:
            text = path.read_text(encoding="utf-8")
        except OSError as e:
            raise TokenError(f"cannot read the token file {path}: {e.strerror}") from None
        sources.append((str(path), text.splitlines()))
    for where, lines in sources:
        for line in lines:
            if line.strip() and not line.lstrip().startswith("#"):
                token, name = _caller(line.strip(), where)
                tokens[token] = name
    return tokens


class AuthFields(BaseModel):
    """Settings of a server that may require tokens (``<PREFIX>_AUTH_TOKENS[_FILE]``)."""

    auth_tokens: str | None = Field(
        default=None,
        description="Accepted bearer tokens, comma-separated ('name:token' names the caller).",
    )
    auth_tokens_file: Path | None = Field(
        default=None, description="File of accepted tokens, one per line (a mounted Secret)."
    )

    def tokens(self) -> dict[str, str]:
        """Token -> caller name; empty: authentication is off."""
        return load_tokens(self.auth_tokens, self.auth_tokens_file)


def authorization(token: str | None, path: Path | None) -> str | None:
    """The ``Authorization`` header a client sends: the file's token, else ``token``, else none.

    The file may be a bare token or a server's token file (the chart's client-tokens Secret):
    its first token is sent, without its ``name:`` prefix, as the helm test pod does.
    """
    if path is not None:
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except OSError as e:
            raise TokenError(f"cannot read {path}: {e.strerror}") from None
        listed = [
            line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")
        ]
        if not listed:
            raise TokenError(f"the token file {path} holds no token")
        token = listed[0].rpartition(":")[2].strip()
    return f"Bearer {token}" if token else None


def bearer_token(scope: Scope) -> str | None:
    """The token of an ``Authorization: Bearer`` header, if the request has one."""
    for name, value in scope["headers"]:
        if name == b"authorization":
            scheme, _, token = value.decode("latin-1").partition(" ")
            return token.strip() if scheme.lower() == "bearer" and token.strip() else None
    return None


class BearerAuth:
    """ASGI middleware: 401 without a known token; the caller's name as the request's user."""

    def __init__(
        self,
        app: ASGIApp,
        tokens: Mapping[str, str],
        public_get_paths: Collection[str] = (),
        jsonrpc_paths: Collection[str] = (),
    ) -> None:
        """Check requests against ``tokens`` (token -> caller name)."""
        self._app = app
        self._tokens = [(token.encode(), name) for token, name in tokens.items()]
        self._public_get = frozenset(public_get_paths)
        self._jsonrpc = frozenset(jsonrpc_paths)

    def _caller(self, scope: Scope) -> str | None:
        token = bearer_token(scope)
        if token is None:
            return None
        given, found = token.encode(), None
        for known, name in self._tokens:  # compare with every token: no early exit to time
            if hmac.compare_digest(given, known):
                found = name
        return found

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Let public requests through; authenticate the others."""
        if scope["type"] != "http":
            await self._app(scope, receive, send)
            return
        path, method = scope["path"], scope["method"]
        if path in EXEMPT_PATHS or (method in ("GET", "HEAD") and path in self._public_get):
            await self._app(scope, receive, send)
            return
        caller = self._caller(scope)
        if caller is None:
            await self._unauthorized(scope, send)
            return
        scope["user"] = SimpleUser(caller)
        scope["auth"] = AuthCredentials(["authenticated"])
        await self._app(scope, receive, send)

    async def _unauthorized(self, scope: Scope, send: Send) -> None:
        message = "authentication required: send Authorization: Bearer <token>"
        if bearer_token(scope) is not None:
            message = "authentication failed: the bearer token is not valid"
        body: object = {"error": message}
        if scope["path"] in self._jsonrpc:
            body = {"jsonrpc": "2.0", "id": None, "error": {"code": -32001, "message": message}}
        payload = json.dumps(body).encode()
        headers = [
            (b"content-type", b"application/json"),
            (b"www-authenticate", b'Bearer realm="nfcorpus-retrieval"'),
            (b"content-length", str(len(payload)).encode()),
        ]
        await send({"type": "http.response.start", "status": 401, "headers": headers})
        await send({"type": "http.response.body", "body": payload})
