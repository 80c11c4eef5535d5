"""A2A requests the SDK does not refuse clearly, refused by the request guard with the reason.

The SDK answers some malformed requests with an internal error (-32603) or with a pydantic dump
that echoes the input (``input_value=...``) and a server-side stack trace in the log. These
checks run on the decoded body before the SDK sees it (see ``RequestGuard``'s ``body_checks``)
and name the problem in a few words instead.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Mapping
from typing import Any

import a2a.server.routes  # noqa: F401  (first: the 0.3 adapter module imports it circularly)
from a2a.compat.v0_3.jsonrpc_adapter import JSONRPC03Adapter
from a2a.types import TaskState
from a2a.utils.constants import VERSION_HEADER
from a2a.utils.errors import (
    JSON_RPC_ERROR_CODE_MAP,
    InvalidParamsError,
    MethodNotFoundError,
    VersionNotSupportedError,
)
from pydantic import ValidationError

from services.common.guard.refusal import Refusal
from services.common.validation import describe

_V03_MODELS = JSONRPC03Adapter.METHOD_TO_MODEL
VERSION_NOT_SUPPORTED = JSON_RPC_ERROR_CODE_MAP[VersionNotSupportedError]
METHOD_NOT_FOUND = JSON_RPC_ERROR_CODE_MAP[MethodNotFoundError]
INVALID_PARAMS = JSON_RPC_ERROR_CODE_MAP[InvalidParamsError]
#: What ``ListTasks`` takes as its ``status`` filter: a ``TaskState`` by name or by number.
_TASK_STATES = frozenset(TaskState.keys()) | frozenset(TaskState.values())


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


def _check_list_filter(payload: dict[str, Any]) -> None:
    """Refuse a ``ListTasks`` ``status`` that is no task state (-32602, invalid params).

    Protobuf's JSON reader, as the SDK calls it, drops an enum value it does not know: the
    request would list every task, as if no filter had been asked for (A2A 3.1.4, 5.7).
    """
    params = payload.get("params")
    status = params.get("status") if isinstance(params, dict) else None
    known = isinstance(status, str | int) and not isinstance(status, bool)
    if status is None or (known and status in _TASK_STATES):
        return
    shown = json.dumps(status)
    raise Refusal(
        422,
        f"status {shown[:40]} is not a task state: one of {', '.join(TaskState.keys())}",
        code=INVALID_PARAMS,
    )


def _check_version(payload: dict[str, Any], headers: Mapping[str, str]) -> None:
    """Refuse a 0.3 method under an ``A2A-Version`` header of another era, with its error.

    The SDK answers a 1.0 method's unknown version itself (-32009, version not supported), but
    a 0.3 method's with an internal error (-32603): 0.3 has no such error code.
    """
    method = payload.get("method")
    version = headers.get(VERSION_HEADER.lower(), "").strip()
    if method not in _V03_MODELS or not version or version.startswith("0.3"):
        return
    if version.split(".")[0] == "1":
        raise Refusal(
            422,
            f"{method} is an A2A 0.3 method, but A2A-Version is {version}: send it without "
            "the header (or with 0.3), or call its 1.0 method",
            code=METHOD_NOT_FOUND,
        )
    raise Refusal(
        422,
        f"A2A version {version!r} is not supported: this agent speaks 1.0 (A2A-Version: 1.0) "
        "and 0.3 (no header)",
        code=VERSION_NOT_SUPPORTED,
    )


def message_problem(payload: Any, headers: Mapping[str, str]) -> str | None:
    """A2A's own rules on a JSON-RPC body (whose envelope the guard checked): what is wrong.

    Raises:
        Refusal: An ``A2A-Version`` header the method cannot be served under, or a ``ListTasks``
            filter that is no task state.

    """
    _check_version(payload, headers)
    if payload.get("method") == "ListTasks":  # only there: no cost on the query path
        _check_list_filter(payload)
    return _undecodable_part(payload) or _invalid_v03(payload)
