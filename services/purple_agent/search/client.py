"""The purple agent's search client: one backend found by discovery, timeouts, retries, metrics.

**Discovery** decides the backend by what the server speaks, not by the URL. The URL may be the
MCP endpoint itself (``http://mcp:8000/mcp``), the server's base URL (the seed's
``http://mcp-server:8000``) or the REST endpoint (``.../search_nfcorpus``). The probes
(:func:`probes`) run in a fixed order, first match wins: MCP at the URL as given (unless it is a
bare origin or the REST endpoint), MCP at ``<base>/mcp``, then REST at
``<base>/search_nfcorpus``. ``PURPLE_SEARCH_PROTOCOL`` (``mcp`` or ``rest``) keeps only that
protocol's probes.

The backend is found by the first readiness probe or search (the agent is unready until it is:
pods start in any order, and each probe tries again), and found again after any failure that is
not the search's own, or a failed probe, in case the server was replaced by another version.
Each call then is a single request from the caller's own task over keep-alive connections
(:mod:`services.common.http_pool`): a failed call takes nothing down with it.

The token sent may come from a file read again when it changes
(:class:`~services.common.tokens.ClientToken`): a changed token is found again as a changed
server is, the next call discovering the backend with it.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit, urlunsplit

from opentelemetry.trace import SpanKind, StatusCode

from services.common.http_pool import OriginPool
from services.common.tokens import ClientToken
from services.purple_agent.metrics import BACKEND, MCP_CALL_SECONDS, MCP_RETRIES, REPAIRS
from services.purple_agent.ranking_policy import Candidate
from services.purple_agent.search.backend import (
    KINDS,
    Backend,
    BackendGone,
    McpCallError,
    NoBackend,
    NotSpoken,
    ServerFailed,
    classify,
)
from services.purple_agent.search.mcp_backend import FallbackFactory, probe_mcp
from services.purple_agent.search.rest_backend import PATH, probe_rest
from services.telemetry import exemplars
from services.telemetry.http import annotate
from services.telemetry.tracing import stage, tracer

if TYPE_CHECKING:  # imported when a server needs it (it loads the MCP SDK)
    from services.purple_agent.search.sdk_fallback import SdkFallback

log = logging.getLogger(__name__)
_tracer = tracer(__name__)

#: Longest pause between two attempts of a call.
MAX_BACKOFF_S = 1.0
#: What a server answers a call to an endpoint it does not have: no such path, or method.
GONE = (404, 405)

#: How the client calls the search server: found out by asking it (auto), or MCP / REST only.
SearchProtocol = Literal["auto", "mcp", "rest"]
MCP_PATH = "/mcp"


def _with_path(url: str, path: str) -> str:
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def probes(url: str, protocol: SearchProtocol = "auto") -> list[tuple[str, str]]:
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
    protocol: SearchProtocol,
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


class SearchClient:
    """Pooled client of the search server at ``url`` (any form: see the module docstring)."""

    def __init__(
        self,
        url: str,
        *,
        protocol: SearchProtocol = "auto",
        timeout_s: float,
        retries: int,
        backoff_s: float,
        max_connections: int,
        authorization: str | ClientToken | None = None,
    ) -> None:
        self.url = url
        parsed = urlsplit(url)
        self._address = (
            parsed.hostname or "",
            parsed.port or (443 if parsed.scheme == "https" else 80),
        )
        self._protocol = protocol
        self._token: ClientToken | None = None
        if isinstance(authorization, ClientToken):
            self._token = authorization
            sent = authorization.header()
        else:
            sent = authorization
        self._headers: dict[str, str] = {"authorization": sent} if sent else {}
        self._timeout_s = timeout_s
        self._retries = retries
        self._backoff_s = backoff_s
        self._max_connections = max_connections
        self._pool: OriginPool | None = None
        self._backend: Backend | None = None  # None: not discovered (again) yet
        self._fallback: SdkFallback | None = None  # made for the first server that needs it
        self._retired: list[SdkFallback] = []  # replaced ones: calls may still be in flight
        self._discover_lock = asyncio.Lock()

    @property
    def pool(self) -> OriginPool:
        """The keep-alive connections, created on first use in the running loop."""
        if self._pool is None:
            self._pool = OriginPool(self.url, self._max_connections)
        return self._pool

    @property
    def backend(self) -> Backend | None:
        """The backend in use, if one has been found."""
        return self._backend

    async def aclose(self) -> None:
        """Close the connection pools."""
        self._forget()
        for fallback in [*self._retired, *([self._fallback] if self._fallback else [])]:
            await fallback.aclose()
        self._fallback, self._retired = None, []
        if self._pool is not None:
            await self._pool.aclose()
        self._pool = None

    def _forget(self) -> None:
        self._backend = None
        for kind in KINDS:
            BACKEND.labels(kind).set(0)

    def _token_changed(self) -> None:
        """Take a changed token: the backends hold their headers, so they are found again."""
        sent = self._token.header() if self._token is not None else None
        if self._token is None or sent == self._headers.get("authorization"):
            return
        self._headers = {"authorization": sent} if sent else {}
        self._forget()

    async def _current(self) -> Backend:
        """The backend, discovered on first use (and again after a failure or a new token)."""
        self._token_changed()
        backend = self._backend
        if backend is None:
            async with self._discover_lock:
                if self._backend is None:
                    found = await discover(
                        self.url, self._protocol, self.pool, self._headers, self._sdk_fallback
                    )
                    BACKEND.labels(found.kind).set(1)
                    self._backend = found
                backend = self._backend
        return backend

    def _sdk_fallback(self, url: str) -> SdkFallback:
        """The SDK's route, one per client (kept across discoveries: calls may be in flight)."""
        if self._fallback is None or (self._fallback.url, self._fallback.headers) != (
            url,
            self._headers,
        ):
            # Only a server the plain client does not speak to loads the SDK.
            from services.purple_agent.search.sdk_fallback import SdkFallback

            if self._fallback is not None:
                self._retired.append(self._fallback)
            self._fallback = SdkFallback(
                url, self._headers, timeout_s=self._timeout_s, max_connections=self._max_connections
            )
        return self._fallback

    async def _call_once(self, query: str, top_k: int, timeout_s: float) -> list[Candidate]:
        async with asyncio.timeout(timeout_s):
            backend = await self._current()
            try:
                hits = await backend.search(query, top_k)
            except ServerFailed as e:
                if e.status in GONE:  # a rolling upgrade put another kind of server here
                    raise BackendGone(
                        f"{backend.url} answered HTTP {e.status} to a {backend.kind} call"
                    ) from e
                raise
        for kind, count in hits.dropped.items():
            REPAIRS.labels(kind).inc(count)
        if hits.dropped:
            annotate(repaired=dict(hits.dropped))
            log.warning("dropped unusable hits from %s: %s", backend.url, dict(hits.dropped))
        return hits.candidates

    async def search(self, query: str, top_k: int, deadline: float) -> list[Candidate]:
        """Candidates for ``query``, best first: valid ids, each once (:func:`.backend.read_answer`).

        Args:
            query: The query text.
            top_k: How many candidates to ask for.
            deadline: ``time.monotonic()`` by which the answer is needed.

        Raises:
            McpCallError: The call failed and retries (within the deadline) did not help.

        """
        attempt = 0
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise McpCallError(
                    "deadline", "deadline reached before the search call", retryable=False
                )
            started = time.perf_counter()
            error: McpCallError | None = None
            name = _span_name("rest" if self._protocol == "rest" else "mcp")
            with stage(_tracer, name, kind=SpanKind.CLIENT) as span:
                # Retries are siblings under the request's span: one trace, attempt by attempt.
                span.set_attribute("mcp.attempt", attempt + 1)
                span.set_attribute("server.address", self._address[0])
                span.set_attribute("server.port", self._address[1])
                try:
                    candidates = await self._call_once(
                        query, top_k, min(self._timeout_s, remaining)
                    )
                except Exception as e:
                    error = classify(e, self.url)
                    span.set_status(StatusCode.ERROR, str(error))
                    span.set_attribute("error.type", error.reason)
                backend = self._backend
                if backend is not None:
                    span.update_name(_span_name(backend.kind))
                    span.set_attribute("nfcorpus.search.backend", backend.kind)
            elapsed = time.perf_counter() - started
            if error is None:
                exemplars.observe(MCP_CALL_SECONDS, elapsed, outcome="ok")
                return candidates
            exemplars.observe(MCP_CALL_SECONDS, elapsed, outcome=error.reason.removeprefix("mcp_"))
            if error.reason != "mcp_tool_error":
                self._forget()  # discover again: the server may have been replaced
            delay = min(self._backoff_s * 2**attempt, MAX_BACKOFF_S)
            if not error.retryable or attempt >= self._retries:
                raise error
            if time.monotonic() + delay >= deadline:
                raise error
            attempt += 1
            MCP_RETRIES.inc()
            log.warning("search call failed (%s), retry %d in %.2fs", error, attempt, delay)
            await asyncio.sleep(delay)

    async def ready(self, timeout_s: float) -> tuple[bool, str]:
        """Whether a backend is found and its server answers, and a short explanation."""
        try:
            async with asyncio.timeout(timeout_s):
                backend = await self._current()
                ready, detail = await backend.ready()
        except Exception as e:
            return False, str(classify(e, self.url))
        if not ready:
            self._forget()  # the next call or probe finds out what the server is now
        return ready, detail


def _span_name(kind: str) -> str:
    return "POST /search_nfcorpus" if kind == "rest" else "tools/call search_nfcorpus"
