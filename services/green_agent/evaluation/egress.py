"""Where the green agent's A2A server may send requests: the allowed origins of its URLs.

An assessment request names the URLs the evaluator calls (the participant; the MCP server whose
vector searches it counts, ``config.mcp_server_url``), and the evaluator's token
(``GREEN_AGENT_TOKEN``) goes with every request to the participant. Were any URL accepted,
whoever reaches the server could make it call any address and collect the token. So every URL a
request names must be on an allowed origin (``GREEN_ALLOWED_ORIGINS``), checked before any
request goes out, and the HTTP clients refuse any request to another origin before it leaves
(the URL an agent card names; they follow no redirects either).

Entries, comma-separated (``scheme://host:port`` is an origin, as browsers define it):

- ``http://host:9009``, ``https://host:8443``: that scheme, host and port;
- ``http://host``, ``https://host``: that scheme on its default port (80, 443);
- ``host:9009``: http or https on that port; ``host:*`` / ``http://host:*``: any port;
- ``*`` alone: any origin (the check off; the token then goes wherever a request points).

A bare ``host`` is refused: it would leave the port to a guess. Host names match exactly and
case-insensitively (no wildcard subdomains, no DNS: a name is allowed as written, an address
as an address; IPv6 in brackets, ``[::1]:*``). A name ending in a dot is refused, in an entry and
in a URL: ``release-purple-agent.dev.`` is an absolute DNS name, which a pod resolves without its
search domains, on public DNS, where anyone may own it. The default is loopback on any port.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable
from dataclasses import dataclass

import httpx

from services.green_agent.evaluation.bounds import found_in

SETTING = "GREEN_ALLOWED_ORIGINS"
LOOPBACK = ("127.0.0.1:*", "localhost:*", "[::1]:*")
DEFAULT_PORTS = {"http": 80, "https": 443}
_NAME = re.compile(r"[a-z0-9_-]+(\.[a-z0-9_-]+)*")


class EgressRefused(httpx.RequestError):
    """A request to an origin outside the allow-list, stopped before it left."""


TRAILING_DOT = "ends with a dot: an absolute DNS name, resolved without the search domains"


def _host(raw: str) -> str:
    """A host as compared: lower case, an IP address in its canonical form."""
    host = raw.lower()
    try:
        return str(ipaddress.ip_address(host.removeprefix("[").removesuffix("]")))
    except ValueError:
        return host


def _port(text: str, entry: str) -> int:
    if not text.isdigit() or not 0 < int(text) < 65536:
        raise ValueError(f"{entry!r}: the port must be a number in 1..65535 or '*' (any port)")
    return int(text)


@dataclass(frozen=True, slots=True)
class OriginRule:
    """One allowed origin; ``None`` scheme or port: any (http or https; any port)."""

    scheme: str | None
    host: str
    port: int | None

    @classmethod
    def parse(cls, entry: str) -> OriginRule:
        """Read one entry (see the module docstring); ``ValueError`` says what is wrong."""
        scheme, sep, rest = entry.partition("://")
        if not sep:
            scheme, rest = "", entry
        scheme = scheme.lower()
        if sep and scheme not in DEFAULT_PORTS:
            raise ValueError(f"{entry!r}: the scheme must be http or https")
        rest = rest.removesuffix("/")
        if not rest or any(c in rest for c in "/?#@ "):
            raise ValueError(f"{entry!r} is not an origin: scheme://host:port, no path or user")
        if rest.startswith("["):
            bracketed, _, after = rest.partition("]")
            host, port_text = bracketed + "]", after.removeprefix(":")
            if after and not after.startswith(":"):
                raise ValueError(f"{entry!r}: expected ':port' after the IPv6 address")
        elif rest.count(":") > 1:
            raise ValueError(f"{entry!r}: an IPv6 address goes in brackets, as [::1]:*")
        else:
            host, _, port_text = rest.partition(":")
        if rest.endswith(":"):
            _port("", entry)
        name = _host(host)
        if name.endswith("."):
            raise ValueError(f"{entry!r}: {host!r} {TRAILING_DOT}; write it without the dot")
        if host.startswith("[") and ":" not in name:
            raise ValueError(f"{entry!r}: brackets hold an IPv6 address only")
        if ":" not in name and not _NAME.fullmatch(name):
            ascii_hint = "" if name.isascii() else " (write a name in its ASCII xn-- form)"
            raise ValueError(f"{entry!r}: {host!r} is not a host name or IP address{ascii_hint}")
        if port_text == "*":
            return cls(scheme or None, name, None)
        if port_text:
            return cls(scheme or None, name, _port(port_text, entry))
        if not scheme:
            raise ValueError(
                f"{entry!r} names no port: write {host}:PORT, {host}:* (any port) or "
                f"http://{host} (port 80)"
            )
        return cls(scheme, name, DEFAULT_PORTS[scheme])

    def admits(self, scheme: str, host: str, port: int) -> bool:
        """Whether a URL's scheme, normalised host and port are on this origin."""
        return self.scheme in (None, scheme) and self.host == host and self.port in (None, port)


class AllowedOrigins:
    """The origins the green agent's server may call; :meth:`refusal` says why a URL is not."""

    def __init__(self, entries: Iterable[str]) -> None:
        """Parse the entries; ``ValueError`` names the first bad one."""
        self.entries = tuple(e.strip() for e in entries if e.strip())
        self.any = "*" in self.entries
        if self.any and len(self.entries) > 1:
            raise ValueError("'*' allows any origin: give it alone, or list the origins")
        if not self.entries:
            raise ValueError(f"no origin listed: the default is {','.join(LOOPBACK)}")
        self._rules = () if self.any else tuple(OriginRule.parse(e) for e in self.entries)

    def refusal(self, url: str | httpx.URL) -> str | None:
        """Why ``url`` may not be called (naming the setting), or None when it may."""
        if self.any:
            return None
        try:
            parsed = httpx.URL(url)
        except httpx.InvalidURL as e:
            return f"it is not a URL ({e})"
        if parsed.scheme not in DEFAULT_PORTS or not parsed.raw_host:
            return "it is not an http or https URL"
        port = parsed.port or DEFAULT_PORTS[parsed.scheme]
        host = _host(parsed.raw_host.decode("ascii"))
        if host.endswith("."):
            return f"its host {host} {TRAILING_DOT}, which {SETTING} never allows"
        if 0 < port < 65536 and any(r.admits(parsed.scheme, host, port) for r in self._rules):
            return None
        shown = f"[{host}]" if ":" in host else host
        return (
            f"its origin {parsed.scheme}://{shown}:{port} is not in {SETTING} "
            f"({', '.join(self.entries)})"
        )

    def first_refusal(self, urls: Iterable[str]) -> str | None:
        """``"URL: why"`` of the first of ``urls`` that may not be called, or None."""
        for url in urls:
            if (reason := self.refusal(url)) is not None:
                return f"{url}: {reason}"
        return None

    async def guard(self, request: httpx.Request) -> None:
        """``httpx`` request hook: refuse a request to another origin before it is sent."""
        reason = self.refusal(request.url)
        if reason is not None:
            url = request.url.copy_with(userinfo=b"", query=None, fragment=None)
            raise EgressRefused(f"refused to call {url}: {reason}", request=request)


def refused_in(error: BaseException) -> EgressRefused | None:
    """The :class:`EgressRefused` behind ``error`` (SDKs wrap transport errors), if any."""
    return found_in(error, EgressRefused)
