"""Which backend the configured URL offers: decided by what the server speaks, not by the URL.

The URL may be the MCP endpoint itself (``http://mcp:8000/mcp``), the server's base URL (the
seed's ``http://mcp-server:8000``) or the REST endpoint (``.../search_nfcorpus``). The probes
run in a fixed order, first match wins: MCP at the URL as given (unless it is a bare origin or the
REST endpoint), MCP at ``<base>/mcp``, then REST at ``<base>/search_nfcorpus``.
``PURPLE_SEARCH_PROTOCOL`` (``mcp`` or ``rest``) keeps only that protocol's probes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal
from urllib.parse import urlsplit, urlunsplit

from services.purple_agent.search._backend import Backend, NotSpoken
from services.purple_agent.search._errors import NoBackend
from services.purple_agent.search._mcp import FallbackFactory, probe_mcp
from services.purple_agent.search._pool import OriginPool
from services.purple_agent.search._rest import PATH, probe_rest

Protocol = Literal["auto", "mcp", "rest"]
MCP_PATH = "/mcp"


def _with_path(url: str, path: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def probes(url: str, protocol: Protocol = "auto") -> list[tuple[str, str]]:
    """``(protocol, endpoint)`` in the order they are tried."""
    path = urlsplit(url).path.rstrip("/")
    base = path.removesuffix(PATH) if path.endswith(PATH) else path.removesuffix(MCP_PATH)
    mcp = [url] if path and not path.endswith(PATH) else []
    if _with_path(url, base + MCP_PATH) not in mcp:
        mcp.append(_with_path(url, base + MCP_PATH))
    found = [("mcp", endpoint) for endpoint in mcp]
    found.append(("rest", url if path.endswith(PATH) else _with_path(url, base + PATH)))
    return [(p, endpoint) for p, endpoint in found if protocol in ("auto", p)]


async def discover(
    url: str,
    protocol: Protocol,
    pool: OriginPool,
    headers: Mapping[str, str],
    fallback: FallbackFactory,
) -> Backend:
    """The first backend the server at ``url`` speaks.

    Raises:
        NoBackend: None of the probes found its protocol (the message lists what each met).
        ConnectFailed, ServerRefused, ServerFailed, ...: the server could not be asked.

    """
    met: list[str] = []
    for kind, endpoint in probes(url, protocol):
        try:
            if kind == "mcp":
                return await probe_mcp(endpoint, pool, headers, fallback)
            return await probe_rest(endpoint, pool, headers)
        except NotSpoken as e:
            met.append(str(e))
    wanted = (
        "neither MCP nor the REST search wire" if protocol == "auto" else f"no {protocol.upper()}"
    )
    raise NoBackend(f"found {wanted} at {url} ({'; '.join(met)})")
