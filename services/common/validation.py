"""A pydantic ``ValidationError`` read once, in our words: where, what, and which rule.

pydantic's own rendering echoes the offending input (a query, a token, a whole body) and links
to its documentation. :func:`problems` reads each error's field path, message and type and
never the input; each caller joins them in its own wire format: the purple agent's failure
message, the MCP server's ``detail`` list, and :func:`describe` for the JSON-RPC errors of both
protocols (A2A 0.3 bodies, MCP params).
"""

from __future__ import annotations

from typing import NamedTuple

from pydantic import ValidationError

_MAX_LISTED = 3


class Problem(NamedTuple):
    """One validation error: the field's path, pydantic's message and the error's type."""

    field: str
    message: str
    type: str


def _field_path(loc: tuple[int | str, ...], root: str = "body") -> str:
    """``params.message.role``; an empty key shows as ``""``, an empty path as ``root``."""
    return ".".join(str(part) or '""' for part in loc) or root


def problems(error: ValidationError, root: str = "body", limit: int | None = None) -> list[Problem]:
    """The errors of ``error`` in order (the first ``limit``); ``root`` names the whole value."""
    found = error.errors(include_input=False, include_url=False)
    return [Problem(_field_path(e["loc"], root), e["msg"], e["type"]) for e in found[:limit]]


def describe(error: ValidationError, limit: int = _MAX_LISTED) -> str:
    """``where: what`` for the first few errors; never the offending input itself."""
    listed = "; ".join(f"{p.field}: {p.message}" for p in problems(error, limit=limit))
    count = error.error_count()
    return listed + (f" (and {count - limit} more)" if count > limit else "")
