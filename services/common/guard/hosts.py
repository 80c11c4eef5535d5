"""Host and Origin: only the names a server is reached by, so no web page can drive it.

A page a person opens in a browser can reach a server that person can reach (on loopback,
through a port-forward, behind a firewall): by a cross-site request, whose ``Origin`` names the
page, or by DNS rebinding, where the page's own name turns to the server's address and its
requests carry a foreign ``Host``. Every server therefore answers only requests whose ``Host`` is
one of its names (421 otherwise) and whose ``Origin``, when a browser sends one, is one of them
too, over http or https (403 otherwise). Starlette's ``TrustedHostMiddleware`` checks the Host
alone and cannot tell one port from another; the MCP SDK checks both, for ``/mcp`` only.

Entries (each server's ``*_ALLOWED_HOSTS``): ``name:port``; ``name:*`` (the name on any port, or
without one); ``name`` alone (without a port: port 80 or 443, as a browser writes it); ``*``
switches the check off on purpose. Names compare case-insensitively. The frame's own paths
(probes and ``/metrics``) are exempt: the kubelet and Prometheus address a pod by its IP.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable
from typing import Annotated
from urllib.parse import urlsplit

from pydantic import BaseModel, Field, field_validator
from pydantic_settings import NoDecode
from starlette.types import ASGIApp, Receive, Scope, Send

from services.common.guard.refusal import Guard, Refusal
from services.common.header_values import header

#: What a server answers to when it is told nothing else: its loopback names, any port.
LOOPBACK_HOSTS = ("127.0.0.1:*", "localhost:*", "[::1]:*")


def url_host(url: str) -> str | None:
    """The ``host:port`` a client sends as ``Host`` for ``url`` (None when it names no host)."""
    parts = urlsplit(url)
    if not parts.hostname:
        return None
    name = f"[{parts.hostname}]" if ":" in parts.hostname else parts.hostname
    return name if parts.port is None else f"{name}:{parts.port}"


class HostFields(BaseModel):
    """The setting of the names a server answers to: ``<PREFIX>_ALLOWED_HOSTS``."""

    allowed_hosts: Annotated[list[str], NoDecode] = Field(
        default_factory=list,
        description="Host headers the server answers, and the Origins (http or https) it takes "
        "(comma list; 'host:*' allows any port, '*' switches the check off); empty: the "
        "loopback names on any port and the host of the server's own public URL. Others get "
        "421 (Host) or 403 (Origin).",
    )

    @field_validator("allowed_hosts", mode="before")
    @classmethod
    def _split_hosts(cls, value: object) -> object:
        if isinstance(value, str):
            return [h.strip() for h in value.split(",") if h.strip()]
        return value

    def host_rules(self, public_url: str | None = None) -> list[str]:
        """The entries in force: the setting's, else loopback and ``public_url``'s host."""
        if self.allowed_hosts:
            return list(self.allowed_hosts)
        own = url_host(public_url) if public_url else None
        return [*LOOPBACK_HOSTS, *([own] if own else [])]


class HostRules:
    """The names a server answers to (see the module docstring); :meth:`allows` checks one."""

    def __init__(self, entries: Iterable[str]) -> None:
        """Read the entries; ``ValueError`` names a bad one."""
        self.entries = tuple(e.strip().lower() for e in entries if e.strip())
        self.any = "*" in self.entries
        if not self.entries:
            raise ValueError("no host allowed: list the names the server is reached by")
        self._exact: set[bytes] = set()
        self._any_port: set[bytes] = set()
        for entry in self.entries:
            if entry == "*":
                continue
            if any(c in entry for c in "/@?# ") or entry.startswith(":"):
                raise ValueError(f"{entry!r} is not a host: name, name:port or name:*")
            if entry.endswith(":*"):
                self._any_port.add(entry[:-2].encode())
            else:
                self._exact.add(entry.encode())

    def allows(self, host: bytes) -> bool:
        """Whether a ``Host`` value (``name`` or ``name:port``) is one of the server's names."""
        host = host.lower()
        if self.any or host in self._exact:
            return True
        name, sep, port = host.rpartition(b":")
        if not sep or name.endswith(b":") or (not name.startswith(b"[") and b":" in name):
            name, port = host, b""  # no port (an IPv6 address alone is bracketed)
        return name in self._any_port and (not port or port.isdigit())

    def allows_origin(self, origin: bytes) -> bool:
        """Whether an ``Origin`` (``scheme://host[:port]``) is one of the server's names."""
        scheme, sep, host = origin.partition(b"://")
        return bool(sep) and scheme.lower() in (b"http", b"https") and self.allows(host)


class TrustedHosts(Guard):
    """ASGI middleware: 421 for a foreign ``Host``, 403 for a foreign ``Origin``."""

    def __init__(
        self,
        app: ASGIApp,
        rules: HostRules,
        exempt_paths: Collection[str],
        jsonrpc_paths: Collection[str] = (),
    ) -> None:
        """Check requests to ``app`` against ``rules``, but for ``exempt_paths``."""
        super().__init__(app, jsonrpc_paths)
        self._rules = rules
        self._exempt = frozenset(exempt_paths)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass on a request of the server's own names; refuse the others."""
        if scope["type"] != "http" or self._rules.any or scope["path"] in self._exempt:
            await self._app(scope, receive, send)
            return
        host = header(scope, b"host")
        if host is None or not self._rules.allows(host):
            shown = "none" if host is None else host.decode("latin-1")[:100]
            refusal = Refusal(421, f"this server is not reached by the Host {shown}")
        else:
            origin = header(scope, b"origin")
            if origin is None or self._rules.allows_origin(origin):
                await self._app(scope, receive, send)
                return
            shown = origin.decode("latin-1")[:100]
            refusal = Refusal(403, f"requests from the Origin {shown} are not accepted")
        await self._refuse(scope, send, refusal)
