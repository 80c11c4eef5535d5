"""The purple agent's A2A messages: the request a message carries, the answer written back.

The request is ``{"query": str, "top_k": int = 5}`` (as message text, or as a data part), or a
plain-text question (asked with ``top_k`` 5, the seed's default); what is wrong with any other
fails the task as ``invalid_request``, naming every problem.

On success the task gets exactly one artifact, ``retrieval_results``, with one data part
``{"doc_ids": [...]}``, and completes without a message: a 0.3 green agent concatenates the final
status text and every artifact part before ``json.loads``, so anything else would break it.

Every message is one A2A retrieval request of the metrics (``services.purple_agent.metrics``):
in flight while read and answered, timed, and counted by reason when it fails, an invalid one
included.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Mapping
from typing import Any

from a2a.helpers import get_data_parts, get_text_parts, new_data_part
from a2a.types import Artifact, Message
from pydantic import BaseModel, ConfigDict, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from services.common.guard.body import LONE_SURROGATE, has_lone_surrogate
from services.common.limits import MAX_QUERY_CHARS, MAX_TOP_K
from services.common.validation import problems
from services.purple_agent.a2a.handler import Answer, Failed
from services.purple_agent.agent import AgentFailure, RetrievalAgent
from services.purple_agent.metrics import FAILURES, IN_FLIGHT, REQUEST_SECONDS
from services.telemetry import exemplars
from services.telemetry.http import annotate, query_prefix

log = logging.getLogger(__name__)

ARTIFACT_NAME = "retrieval_results"

EXPECTED = '{"query": "<text>", "top_k": <1..100, default 5>} or a plain-text question'


def _kind(value: object) -> str:
    """How a wrong value is named in a failure message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, str):
        shown = value if len(value) <= 20 else value[:20] + "..."
        return f"the string {json.dumps(shown)}"
    if isinstance(value, list):
        return "a list"
    return "an object" if isinstance(value, dict) else type(value).__name__


class RetrievalRequest(BaseModel):
    """A validated request. Unknown fields are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)

    query: str
    top_k: int = 5

    @field_validator("query", mode="before")
    @classmethod
    def _check_query(cls, value: object) -> str:
        if not isinstance(value, str):
            raise PydanticCustomError(
                "query_type", "must be a string, got {kind}", {"kind": _kind(value)}
            )
        if not value.strip():
            raise PydanticCustomError("query_empty", "must not be empty")
        if has_lone_surrogate(value):  # JSON text may escape one; the MCP call could not send it
            raise PydanticCustomError("query_text", LONE_SURROGATE)
        if len(value) > MAX_QUERY_CHARS:
            raise PydanticCustomError(
                "query_length",
                "must be at most {limit} characters, got {length}",
                {"limit": MAX_QUERY_CHARS, "length": len(value)},
            )
        return value

    @field_validator("top_k", mode="before")
    @classmethod
    def _check_top_k(cls, value: object) -> int:
        # Data parts carry every number as a float: 5.0 is 5, but 5.5, "5" or true are not.
        if (
            isinstance(value, bool)
            or not isinstance(value, int | float)
            or (isinstance(value, float) and not value.is_integer())
        ):
            raise PydanticCustomError(
                "top_k_type", "must be an integer, got {kind}", {"kind": _kind(value)}
            )
        top_k = int(value)
        if not 1 <= top_k <= MAX_TOP_K:
            raise PydanticCustomError(
                "top_k_range",
                "must be between 1 and {limit}, got {value}",
                {"limit": MAX_TOP_K, "value": top_k},
            )
        return top_k


def _invalid(detail: str) -> AgentFailure:
    return AgentFailure("invalid_request", f"invalid request: {detail}; expected {EXPECTED}")


def validate_payload(payload: object) -> RetrievalRequest:
    """Validate a decoded payload, naming every problem in the failure message."""
    if not isinstance(payload, Mapping):
        raise _invalid(f"the payload must be a JSON object, got {_kind(payload)}")
    try:
        return RetrievalRequest.model_validate(dict(payload))
    except ValidationError as e:
        listed = (
            f"{p.field} {'is required' if p.type == 'missing' else p.message}"
            for p in problems(e, root="payload")
        )
        raise _invalid("; ".join(listed)) from None


def parse_message(message: Message | None) -> RetrievalRequest:
    """Return the request an A2A message carries.

    Its first data part; else its text: a JSON object is the request, any other text is a
    question a person typed, asked with the default ``top_k`` (text that starts like a JSON
    object but is not one is a mistake, and fails with what is wrong).
    """
    if message is None:
        raise _invalid("no message")
    data: list[Any] = get_data_parts(message.parts)
    if data:
        return validate_payload(data[0])
    texts = get_text_parts(message.parts)
    if not texts:
        raise _invalid("the message has no text or data part")
    text = "".join(texts)
    if not text.strip():
        raise _invalid("the message text is empty")
    try:
        payload = json.loads(text)
    except json.JSONDecodeError as e:
        if text.lstrip().startswith("{"):
            raise _invalid(f"the message text is not JSON ({e.msg} at position {e.pos})") from None
        payload = None
    if isinstance(payload, dict):
        return validate_payload(payload)
    # Plain text (or a bare JSON string, number...): the question itself.
    question = payload if isinstance(payload, str) else text
    return validate_payload({"query": question.strip()})


def answer_with(agent: RetrievalAgent) -> Answer:
    """What :class:`~services.purple_agent.a2a.handler.DirectRequestHandler` runs for each message."""

    async def answer(message: Message) -> Artifact | Failed:
        started = time.perf_counter()
        task_id = message.task_id
        IN_FLIGHT.inc()
        try:
            request = parse_message(message)
            annotate(top_k=request.top_k, query=query_prefix(request.query))
            doc_ids = await agent.answer(request.query, request.top_k)
        except Exception as e:
            failure = (
                e
                if isinstance(e, AgentFailure)
                else AgentFailure(
                    "internal",
                    f"internal error: the agent failed ({type(e).__name__}); its log has the cause",
                    f"internal error: {e!r}",
                )
            )
            FAILURES.labels(failure.reason).inc()
            exemplars.observe(REQUEST_SECONDS, time.perf_counter() - started, outcome="failed")
            annotate(reason=failure.reason)
            if failure is not e:
                log.exception("unexpected error while answering", extra={"task_id": task_id})
            elif failure.reason != "invalid_request":  # the caller's mistake is not an incident
                # The detail names what the caller's answer leaves out (the search service's
                # address, what it said): the task id ties it to the task the caller holds.
                log.warning(
                    "request failed (%s): %s",
                    failure.reason,
                    failure.detail,
                    extra={"task_id": task_id},
                )
            return Failed(str(failure))
        finally:
            IN_FLIGHT.dec()
        exemplars.observe(REQUEST_SECONDS, time.perf_counter() - started, outcome="completed")
        return Artifact(name=ARTIFACT_NAME, parts=[new_data_part({"doc_ids": doc_ids})])

    return answer
