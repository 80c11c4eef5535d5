"""What the search client and every backend agree on: the calls, the answer, the failures.

A backend (:class:`Backend`) is one way of calling the search, found by discovery
(:mod:`.client`): MCP (:mod:`.mcp_backend`, through our own client or the MCP SDK's) or the
seed's REST wire (:mod:`.rest_backend`).

**The answer.** MCP (``structuredContent``, or the JSON of its text content) and REST (the body)
both carry ``{"results": [{"doc_id", "score", "title", "text"}, ...]}``, of which the agent reads
the ids and scores; the seed's REST server adds keys of its own (``qdrant_calls``), which are
ignored, and reports a failure inside an HTTP 200 as ``{"error": "...", "results": []}``. Every
backend's answer is read by :func:`read_answer`.
What the agent cannot use is repaired where it can be (a malformed hit, an id that is no
NFCorpus id, a duplicate: dropped and counted) and is a failure with the reason where it cannot
(no results list, an error, nothing usable at all).

**The failures.** Every failed call becomes an :class:`McpCallError` (:func:`classify`): a
label, a message for the logs (it names the server's URL and what it said), a message for the
caller (:attr:`McpCallError.public`: what failed, in words that name nothing internal), and
whether to try again. The labels keep the ``mcp_`` prefix
whatever the backend (MCP or the seed's REST wire): they name the hop to the search server, and
dashboards and alerts read them. A retry is worth it only when the server did no work on the
attempt (it refused, was unreachable, or went away mid-way): another attempt, perhaps on another
replica behind the Service, duplicates nothing. A timeout is not retried: the server may still
be searching.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from dataclasses import dataclass, field
from typing import Protocol

from services.common.http_pool import ConnectFailed, ConnectionBroken
from services.common.jsonrpc import RpcError
from services.purple_agent.metrics import SEARCH_BACKENDS
from services.purple_agent.ranking_policy import Candidate

#: The backends, the ``backend`` label of ``purple_search_backend``.
KINDS = SEARCH_BACKENDS


class Backend(Protocol):
    """One way of calling the search: found by discovery, used until a call fails."""

    @property
    def kind(self) -> str:
        """One of :data:`KINDS`."""
        ...

    @property
    def url(self) -> str:
        """The endpoint it calls."""
        ...

    async def search(self, query: str, top_k: int) -> SearchAnswer:
        """The hits for ``query``; raises the exceptions :func:`classify` reads."""
        ...

    async def ready(self) -> tuple[bool, str]:
        """Whether the server can search now, and why not."""
        ...


class NotSpoken(Exception):
    """The endpoint answered, but not in the protocol probed (the message says what it did)."""


def not_here(status: int) -> bool:
    """Whether an HTTP status means "no such protocol at this endpoint", not a failure of it.

    401 and 403 (a token) and 429 (busy) are the server speaking; any other 4xx (404, 405, 406,
    415, 400...) is an endpoint that is not there or takes another kind of request.
    """
    return 400 <= status < 500 and status not in (401, 403, 429)


#: Every NFCorpus document id has this form; anything else from the server is dropped.
DOC_ID_PATTERN = re.compile(r"MED-\d+")
_MAX_SHOWN = 160


def is_valid_doc_id(doc_id: str) -> bool:
    """Whether ``doc_id`` has the form of a corpus id (``MED-<n>``)."""
    return DOC_ID_PATTERN.fullmatch(doc_id) is not None


@dataclass(slots=True)
class SearchAnswer:
    """Usable candidates, best first as the server sent them, and what was dropped."""

    candidates: list[Candidate]
    dropped: Counter[str] = field(default_factory=Counter)


def _shown(text: str) -> str:
    return text if len(text) <= _MAX_SHOWN else text[:_MAX_SHOWN] + "..."


def _score(value: object) -> float | None:
    """A hit's score, if it is a finite number (it only breaks ties between equal neighbours)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def read_answer(answer: object) -> SearchAnswer:
    """The candidates of a search answer (see the module docstring).

    Raises:
        ToolFailed: The answer reports an error of the search itself.
        BadAnswer: The answer has no results list, or no usable hit in a non-empty one.

    """
    if not isinstance(answer, dict):
        raise BadAnswer("the answer is not a JSON object")
    error = answer.get("error")
    if error not in (None, "", False):
        raise ToolFailed(_shown(error if isinstance(error, str) else repr(error)))
    results = answer.get("results")
    if not isinstance(results, list):
        found = "no" if results is None else f"a {type(results).__name__} as its"
        raise BadAnswer(f"the answer has {found} results list")
    # The one check of the ids, here where the answer is read rather than in the ranking policy:
    # each drop is counted by kind (purple_search_repairs_total) and logged by the client, an
    # answer with nothing usable fails with the reason, and any policy ranks valid, unique ids.
    hits = SearchAnswer([])
    seen: set[str] = set()
    for hit in results:
        doc_id = hit.get("doc_id") if isinstance(hit, dict) else None
        if not isinstance(doc_id, str) or not isinstance(hit, dict):
            hits.dropped["malformed_hit"] += 1
        elif not is_valid_doc_id(doc_id):
            hits.dropped["invalid_id"] += 1
        elif doc_id in seen:
            hits.dropped["duplicate"] += 1
        else:
            seen.add(doc_id)
            hits.candidates.append(Candidate(doc_id, _score(hit.get("score"))))
    if results and not hits.candidates:
        what = ", ".join(f"{n} {kind.replace('_', ' ')}" for kind, n in hits.dropped.items())
        raise BadAnswer(f"none of its {len(results)} hits is usable ({what})")
    return hits


#: What a caller reads of each failure: the search service's internal address, and what it
#: said, are for the logs only (they reach the caller of the agent, outside the cluster).
PUBLIC = {
    "mcp_tool_error": "the search service could not search",
    "mcp_overloaded": "the search service is overloaded",
    "mcp_unavailable": "the search service is unreachable",
    "mcp_timeout": "the search service did not answer in time",
    "mcp_error": "the search service failed",
    "mcp_bad_response": "the search service sent a malformed answer",
    "deadline": "the search service did not answer",
}


class McpCallError(Exception):
    """An MCP call failed; ``reason`` is a short label, the message says what happened.

    The message names the server and what it said, for the logs; ``public`` says what failed
    without either, for the caller of the agent.

    ``retryable``: the server did no work on this attempt (it refused, was unreachable, or went
    away), so another attempt, perhaps on another replica, duplicates nothing. A timeout is not
    retryable: the server may still be searching, and a retry would search twice.
    """

    def __init__(
        self, reason: str, message: str, *, retryable: bool, public: str | None = None
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.retryable = retryable
        self.public = public or PUBLIC.get(reason, PUBLIC["mcp_error"])


class ServerRefused(Exception):
    """The MCP server did not work on the request: refused (503, 429) or gone (502).

    503 and 429: overloaded or going away; 502: the replica behind the gateway went away before
    it answered.
    """

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


class ServerFailed(Exception):
    """Any other HTTP error status (401 for a wrong token, 504 from a gateway...): not retried."""

    def __init__(self, status: int, detail: str) -> None:
        super().__init__(f"HTTP {status}" + (f": {detail}" if detail else ""))
        self.status = status


class BadAnswer(Exception):
    """The server's answer is not what the protocol says (the message says what is wrong)."""


class NoBackend(Exception):
    """The server answered every discovery probe and spoke none of the protocols probed."""


class BackendGone(Exception):
    """The backend found earlier is no longer there (the server was replaced by another kind)."""


class ToolFailed(Exception):
    """The search itself failed: an MCP tool error, or ``{"error": ...}`` in a REST answer."""


def leaf_error(error: BaseException) -> BaseException:
    """Unwrap task-group exception groups down to the first real error."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    return error


def classify(error: BaseException, url: str) -> McpCallError:
    """The :class:`McpCallError` an exception of one attempt amounts to."""
    leaf = leaf_error(error)
    if isinstance(leaf, McpCallError):
        return leaf
    if isinstance(leaf, ToolFailed):
        return McpCallError("mcp_tool_error", f"search tool error: {leaf}", retryable=False)
    if isinstance(leaf, BackendGone):
        return McpCallError("mcp_unavailable", f"{leaf}: looking again", retryable=True)
    if isinstance(leaf, NoBackend):
        return McpCallError("mcp_error", f"no search backend: {leaf}", retryable=False)
    if isinstance(leaf, ServerRefused):
        return McpCallError(
            "mcp_overloaded",
            f"MCP server at {url} refused the call ({leaf})",
            retryable=True,
            public=f"the search service refused the call (HTTP {leaf.status})",
        )
    if isinstance(leaf, ServerFailed):
        return McpCallError(
            "mcp_error",
            f"MCP server at {url} answered {leaf}",
            retryable=False,
            public=f"the search service answered HTTP {leaf.status}",
        )
    if isinstance(leaf, ConnectFailed):
        return McpCallError(
            "mcp_unavailable",
            f"MCP server at {url} is unreachable ({type(leaf).__name__}: {leaf})",
            retryable=True,
        )
    if isinstance(leaf, TimeoutError):
        return McpCallError(
            "mcp_timeout", f"MCP server at {url} did not answer in time", retryable=False
        )
    if isinstance(leaf, ConnectionBroken):  # the server went away
        return McpCallError(
            "mcp_unavailable",
            f"MCP server at {url} closed the connection ({type(leaf).__name__}: {leaf})",
            retryable=True,
        )
    if isinstance(leaf, RpcError):
        return McpCallError(
            "mcp_error",
            f"MCP server at {url} answered error {leaf.code}: {leaf.message}",
            retryable=False,
            public=f"the search service answered error {leaf.code}",
        )
    if isinstance(leaf, BadAnswer):
        return McpCallError(
            "mcp_bad_response",
            f"MCP server at {url} sent a malformed answer: {leaf}",
            retryable=False,
        )
    return McpCallError(
        "mcp_error", f"MCP call to {url} failed ({type(leaf).__name__}: {leaf})", retryable=False
    )


def refused(status: int) -> bool:
    """Whether an HTTP status says the server did no work (:class:`ServerRefused`)."""
    return status in (429, 502, 503)


def http_failure(status: int, detail: str) -> ServerRefused | ServerFailed:
    """What an HTTP status other than 200 means: refused (retried) or failed (with ``detail``)."""
    # A refusal must stay recognisable, since it is the one error a retry is certain to be
    # worth, and the status tells an operator what went wrong (401: the token).
    if refused(status):
        return ServerRefused(status)
    return ServerFailed(status, detail.strip() or "not a JSON-RPC answer")
