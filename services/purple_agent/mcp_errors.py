"""What a failed MCP call means: a label, a message for the user, and whether to try again.

A retry is worth it only when the server did no work on the attempt (it refused, was
unreachable, or went away mid-way): another attempt, perhaps on another replica behind the
Service, duplicates nothing. A timeout is not retried: the server may still be searching.
"""

from __future__ import annotations

import httpx2
import mcp_types
from mcp.shared.exceptions import MCPError
from pydantic import ValidationError


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
    """The MCP server answered 503 or 429: overloaded or going away, the request not started."""

    def __init__(self, status: int) -> None:
        super().__init__(f"HTTP {status}")
        self.status = status


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
    if isinstance(leaf, ServerRefused):
        return McpCallError(
            "mcp_overloaded", f"MCP server at {url} refused the call ({leaf})", retryable=True
        )
    if isinstance(leaf, httpx2.ConnectError | httpx2.ConnectTimeout):
        return McpCallError(
            "mcp_unavailable",
            f"MCP server at {url} is unreachable ({type(leaf).__name__}: {leaf})",
            retryable=True,
        )
    if isinstance(leaf, TimeoutError | httpx2.TimeoutException):
        return McpCallError(
            "mcp_timeout", f"MCP server at {url} did not answer in time", retryable=False
        )
    if isinstance(leaf, httpx2.TransportError):  # the connection broke: the server went away
        return McpCallError(
            "mcp_unavailable",
            f"MCP server at {url} closed the connection ({type(leaf).__name__}: {leaf})",
            retryable=True,
        )
    if isinstance(leaf, MCPError):
        closed = leaf.code == mcp_types.CONNECTION_CLOSED
        return McpCallError(
            "mcp_unavailable" if closed else "mcp_error",
            f"MCP server at {url} answered error {leaf.code}: {leaf.message}",
            retryable=closed,
        )
    if isinstance(leaf, ValidationError):
        return McpCallError(
            "mcp_bad_response", f"MCP server at {url} sent a malformed result", retryable=False
        )
    return McpCallError(
        "mcp_error", f"MCP call to {url} failed ({type(leaf).__name__}: {leaf})", retryable=False
    )


async def raise_if_refused(response: httpx2.Response) -> None:
    """httpx2 response hook: raise :class:`ServerRefused` on 503 and 429."""
    # The transport turns every HTTP error into one generic JSON-RPC error; a refusal must stay
    # recognisable, since it is the one error a retry is certain to be worth.
    if response.status_code in (429, 503):
        raise ServerRefused(response.status_code)
