"""JSON-RPC 2.0 envelopes checked before the SDKs see them.

Both SDKs validate the envelope with pydantic and answer a wrong one with the validation dump
(echoing the input) or, for a ``method`` that is a list, with an HTTP 500. The request guard
runs this check on every JSON-RPC path, so each protocol sees only well-formed envelopes; the
protocols describe their own validation errors with :func:`services.common.validation.describe`,
which never echoes input.
"""

from __future__ import annotations

from typing import Any


def envelope_problem(payload: Any) -> str | None:
    """What is wrong with a decoded JSON-RPC request (or response) envelope, or None."""
    if not isinstance(payload, dict):
        return "a JSON-RPC message must be an object (batches are not accepted)"
    if payload.get("jsonrpc") != "2.0":
        return 'jsonrpc must be "2.0"'
    request_id = payload.get("id")
    if isinstance(request_id, bool) or not isinstance(request_id, str | int | None):
        return "id must be a string, an integer or null"
    if "method" not in payload:
        # A client may answer a server's request (MCP); then it carries a result or an error.
        return None if "result" in payload or "error" in payload else "method is required"
    if not isinstance(payload["method"], str):
        return "method must be a string"
    if not isinstance(payload.get("params", {}), dict):
        return "params must be an object"
    return None
