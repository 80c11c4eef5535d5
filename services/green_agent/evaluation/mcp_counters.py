"""What the evaluator reads of the MCP server behind the agent, before and after a run.

Two counters, each read twice and differenced: the server's vector searches
(``qdrant_calls_total`` of ``POST /health_check``), which the public evaluator reports as
``vector_search_calls_total`` (:mod:`services.green_agent.assessment.leaderboard`), and its
result-cache lookups by result (``mcp_result_cache_lookups_total`` of ``GET /metrics``), whose
hit ratio a load run reports (:mod:`services.green_agent.load.run`). A server that is not named,
not reachable or silent on a counter gives None, never an error: the run goes on without that
figure. A server with authentication on answers ``/metrics`` only to its scrape token: the
evaluator sends it when given one (``GREEN_MCP_METRICS_TOKEN[_FILE]``), and a read that fails
says why (:class:`Unread`), so the report that lacks the figure says it too.
Both URLs are derived from the named one's parts (:mod:`services.green_agent.evaluation.urls`):
a named URL with a query, a fragment or user information counts nothing and is never called.
"""

from __future__ import annotations

import re

import httpx
from pydantic import BaseModel

from services.green_agent.evaluation.egress import AllowedOrigins
from services.green_agent.evaluation.urls import below, checked

_LOOKUP = re.compile(r'^mcp_result_cache_lookups_total\{result="(hit|miss)"\} (\S+)$', re.M)


def server_base(mcp_server_url: str) -> httpx.URL:
    """The base URL of a server named by its base URL or by its MCP endpoint.

    Raises:
        ValueError: the URL is refused (:func:`~services.green_agent.evaluation.urls.refusal`).

    """
    parsed = checked(mcp_server_url)
    return parsed.copy_with(path=parsed.path.rstrip("/").removesuffix("/mcp") or "/")


def health_check_url(mcp_server_url: str) -> str:
    """``POST /health_check`` of the server at a base URL or at its MCP endpoint.

    Raises:
        ValueError: the URL is refused (:func:`~services.green_agent.evaluation.urls.refusal`).

    """
    return str(below(server_base(mcp_server_url), "health_check"))


async def qdrant_calls_total(
    mcp_server_url: str | None, allowed: AllowedOrigins | None = None
) -> int | None:
    """The server's ``qdrant_calls_total`` now; None when unnamed, unreachable or silent on it.

    With ``allowed``, no request goes to another origin (redirects are not followed either).
    """
    if not mcp_server_url:
        return None
    hooks = {"request": [allowed.guard]} if allowed is not None else None
    try:
        async with httpx.AsyncClient(
            timeout=10, event_hooks=hooks, follow_redirects=False
        ) as client:
            answer = await client.post(health_check_url(mcp_server_url), json={})
            answer.raise_for_status()
            value = answer.json().get("qdrant_calls_total")
    except (httpx.HTTPError, httpx.InvalidURL, ValueError, AttributeError):
        # InvalidURL is no HTTPError: "http://[::1/" would fail the assessment; ValueError is
        # also a refused URL (a fragment, a query), never called.
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def calls_between(before: int | None, after: int | None) -> int | None:
    """Vector searches the server counted during the run (None when either count is missing)."""
    return None if before is None or after is None else max(0, after - before)


class CacheEffect(BaseModel):
    """The MCP server's result-cache lookups during one run (all its clients counted)."""

    lookups: int
    hits: int
    hit_ratio: float | None  # None when nothing was looked up (cache off)


class Unread(BaseModel):
    """Why the server's counters could not be read."""

    reason: str


#: Bytes of an answer's text a reason quotes.
_QUOTED = 200


async def cache_lookups(
    mcp_url: str | None, authorization: str | None = None
) -> dict[str, float] | Unread | None:
    """The server's cache lookups by result now; None when unnamed, or why they are unread.

    ``authorization`` is sent on ``GET /metrics`` (the server's scrape token, as a bearer).
    """
    if not mcp_url:
        return None
    headers = {"authorization": authorization} if authorization else {}
    try:
        url = below(server_base(mcp_url), "metrics")
        async with httpx.AsyncClient(timeout=10) as client:
            answer = await client.get(url, headers=headers)
    except (httpx.HTTPError, httpx.InvalidURL, ValueError) as e:
        return Unread(reason=f"{type(e).__name__}: {e}"[:_QUOTED])
    if answer.status_code in (401, 403):
        given = "was refused" if authorization else "is needed"
        return Unread(
            reason=f"HTTP {answer.status_code} from {url}: its scrape token {given} "
            "(GREEN_MCP_METRICS_TOKEN or GREEN_MCP_METRICS_TOKEN_FILE)"
        )
    if not answer.is_success:
        return Unread(reason=f"HTTP {answer.status_code} from {url}")
    found = {result: float(value) for result, value in _LOOKUP.findall(answer.text)}
    if not found:
        return Unread(reason=f"{url} has no mcp_result_cache_lookups_total")
    return found


def cache_effect(
    before: dict[str, float] | Unread | None, after: dict[str, float] | Unread | None
) -> CacheEffect | Unread | None:
    """The lookups between two readings (None when unread: no server named), or why not."""
    if isinstance(before, Unread):
        return before
    if isinstance(after, Unread):
        return after
    if before is None or after is None:
        return None
    hits = int(after.get("hit", 0) - before.get("hit", 0))
    lookups = hits + int(after.get("miss", 0) - before.get("miss", 0))
    return CacheEffect(lookups=lookups, hits=hits, hit_ratio=hits / lookups if lookups else None)
