"""A2A requests the SDK does not refuse clearly, refused by the request guard with the reason.

The SDK answers some malformed requests with an internal error (-32603) or with a pydantic dump
that echoes the input (``input_value=...``) and a server-side stack trace in the log. These
checks run on the decoded body before the SDK sees it (see ``RequestGuard``'s ``body_checks``)
and name the problem in a few words instead.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

import a2a.server.routes  # noqa: F401  (first: the 0.3 adapter module imports it circularly)
from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter
from pydantic import ValidationError

from services.common.jsonrpc import describe

_V03_MODELS = JSONRPC03Adapter.METHOD_TO_MODEL


def _is_base64(text: str, strict: bool) -> bool:
    # Protobuf's JSON reader (1.0) takes the standard and the URL-safe alphabet, padded or not;
    # the 0.3 adapter decodes with the standard alphabet and needs the padding (``strict``).
    normalized = text if strict else text.strip().replace("-", "+").replace("_", "/")
    if not strict:
        normalized += "=" * (-len(normalized) % 4)
    try:
        base64.b64decode(normalized, validate=True)
    except (binascii.Error, ValueError):
        return False
    return True


def _undecodable_part(payload: dict[str, Any]) -> str | None:
    """A file part whose bytes are not base64: -32603 in 0.3 and "Invalid params" in 1.0.

    (0.3: ``{"kind": "file", "file": {"bytes": ...}}``; 1.0: ``{"raw": ...}``.)
    """
    params = payload.get("params")
    message = params.get("message") if isinstance(params, dict) else None
    parts = message.get("parts") if isinstance(message, dict) else None
    for index, part in enumerate(parts if isinstance(parts, list) else []):
        if not isinstance(part, dict):
            continue
        file = part.get("file")
        legacy = isinstance(file, dict) and "raw" not in part
        encoded = file.get("bytes") if legacy else part.get("raw")  # type: ignore[union-attr]
        if isinstance(encoded, str) and not _is_base64(encoded, strict=legacy):
            return f"message part {index} holds bytes that are not valid base64"
    return None


def _invalid_v03(payload: dict[str, Any]) -> str | None:
    """A 0.3 request that does not fit its method's schema (the SDK would dump pydantic)."""
    model = _V03_MODELS.get(payload.get("method"))  # type: ignore[arg-type]
    if model is None:
        return None
    try:
        model.model_validate(payload)
    except ValidationError as e:
        return f"{describe(e)} (a {payload['method']} request)"
    return None


def message_problem(payload: Any) -> str | None:
    """A2A's own rules on a JSON-RPC body (whose envelope the guard checked): what is wrong."""
    return _undecodable_part(payload) or _invalid_v03(payload)
