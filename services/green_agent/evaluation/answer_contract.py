"""The answer contract of a retrieval agent, checked on every reply.

A completed task carries exactly one artifact with exactly one data part ``{"doc_ids": [...]}``:
exactly ``top_k`` unique valid corpus ids, best first, and no status message. A green agent built
on a2a-sdk 0.3 concatenates the final status text and every artifact part before ``json.loads``;
:func:`legacy_concatenation` reproduces that, and the check requires it to parse to the same data.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any, Literal


@dataclass(frozen=True)
class ReplyPart:
    """One part of an artifact or message, independent of the protocol version."""

    kind: Literal["text", "data", "other"]
    value: Any = None


@dataclass(frozen=True)
class Reply:
    """The final state of a task as the client saw it."""

    state: str
    status_parts: list[ReplyPart] = field(default_factory=list)
    artifacts: list[list[ReplyPart]] = field(default_factory=list)

    @property
    def status_text(self) -> str:
        """Text of the final status message."""
        return "\n".join(str(p.value) for p in self.status_parts if p.kind == "text")


class ContractViolation(Exception):
    """A reply broke the contract; ``reason`` is a short label, the message the detail."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


def _merge_parts(parts: list[ReplyPart]) -> str:
    # What the AgentBeats 0.3 green agent template does with each part.
    chunks = []
    for part in parts:
        if part.kind == "text":
            chunks.append(str(part.value))
        elif part.kind == "data":
            chunks.append(json.dumps(part.value, indent=2))
    return "\n".join(chunks)


def legacy_concatenation(reply: Reply) -> str:
    """Join status text and every artifact part the way a 0.3 green agent does."""
    return _merge_parts(reply.status_parts) + "".join(_merge_parts(a) for a in reply.artifacts)


def loose_doc_ids(reply: Reply) -> list[str]:
    """The ids a lenient 0.3 green agent (the public evaluator) reads from a reply, or ``[]``.

    It joins the parts as :func:`legacy_concatenation` does and scores whatever ``doc_ids``
    that JSON holds, breaches of the contract included.
    """
    try:
        data = json.loads(legacy_concatenation(reply))
    except json.JSONDecodeError:
        return []
    ids = data.get("doc_ids") if isinstance(data, dict) else None
    if not isinstance(ids, list) or not all(isinstance(d, str) for d in ids):
        return []
    return ids


def check_reply(
    reply: Reply, top_k: int, valid_ids: Collection[str], *, legacy: bool = False
) -> list[str]:
    """Return the reply's document ids, or raise :class:`ContractViolation` naming the breach."""
    if reply.state != "completed":
        detail = reply.status_text or "no status message"
        raise ContractViolation("failed_task", f"task {reply.state}: {detail}")
    if reply.status_parts:
        raise ContractViolation("contract", "the completed status carries a message")
    if len(reply.artifacts) != 1:
        raise ContractViolation("contract", f"expected 1 artifact, got {len(reply.artifacts)}")
    parts = reply.artifacts[0]
    if len(parts) != 1 or parts[0].kind != "data":
        kinds = [p.kind for p in parts]
        raise ContractViolation("contract", f"expected 1 data part, got parts {kinds}")
    data = parts[0].value
    if legacy:
        try:
            parsed = json.loads(legacy_concatenation(reply))
        except json.JSONDecodeError as e:
            raise ContractViolation("contract", f"0.3 concatenation is not JSON: {e}") from None
        if parsed != data:
            raise ContractViolation("contract", "0.3 concatenation differs from the data part")
    if not isinstance(data, dict) or not isinstance(data.get("doc_ids"), list):
        raise ContractViolation("contract", 'the data part is not {"doc_ids": [...]}')
    doc_ids: list[Any] = data["doc_ids"]
    if not all(isinstance(d, str) for d in doc_ids):
        raise ContractViolation("contract", "doc_ids holds a non-string")
    if len(set(doc_ids)) != len(doc_ids):
        raise ContractViolation("contract", "doc_ids holds duplicates")
    unknown = [d for d in doc_ids if d not in valid_ids]
    if unknown:
        raise ContractViolation("contract", f"unknown doc ids {unknown[:5]}")
    if len(doc_ids) != top_k:
        raise ContractViolation("contract", f"expected {top_k} doc ids, got {len(doc_ids)}")
    return doc_ids
