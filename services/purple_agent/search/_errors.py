"""What a failed search call means: a label, a message for the user, and whether to try again.

The labels keep the ``mcp_`` prefix whatever the backend (MCP or the seed's REST wire): they name
the hop to the search server, and dashboards and alerts read them.

A retry is worth it only when the server did no work on the attempt (it refused, was
unreachable, or went away mid-way): another attempt, perhaps on another replica behind the
Service, duplicates nothing. A timeout is not retried: the server may still be searching.
"""

from __future__ import annotations

from typing import Any

from services.purple_agent.search._pool import ConnectFailed, ConnectionBroken


class McpCallError(Exception):
    """An MCP call failed; ``reason`` is a short label, the message says what happened.

    ``retryable``: the server did no work on this attempt (it refused, was unreachable, or went
    away), so another attempt, perhaps on another replica, duplicates nothing. A timeout is not
    retryable: the server may still be searching, and a retry would search twice.
    """

    def __init__(self, reason: str, message: str, *, retryable: bool) -> None:
        super().__init__(message)
        self.reason = reason
        self.retryable = retryable


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


class RpcError(Exception):
    """The server answered the request with a JSON-RPC error."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(f"error {code}: {message}")
        self.code = code
        self.message = message
        self.data = data


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
            "mcp_overloaded", f"MCP server at {url} refused the call ({leaf})", retryable=True
        )
    if isinstance(leaf, ServerFailed):
        return McpCallError("mcp_error", f"MCP server at {url} answered {leaf}", retryable=False)
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
