"""An agent's answer read as the evaluator reads it: one reading for every client that loads it.

The load generator's lean client (:mod:`services.green_agent.load.client`) and the Locust users of
:mod:`services.green_agent.locustfile` send the evaluator's requests over transports of their own
(an httptools pool; Locust's ``FastHttpUser``). Both hand what came back, an HTTP status and the
body's bytes, to :func:`read_reply`, so the same answer is the same reply whoever asked, and a
broken one fails with the evaluator's reason: ``overloaded`` (HTTP 429 or 503), ``transport``
(another status, a body that is not JSON, a 1.0 JSON-RPC error, no task), ``jsonrpc_error`` (a
0.3 JSON-RPC error). :func:`answer_verdict` adds the contract check of
:func:`~services.green_agent.evaluation.evaluator.ask_and_check`: the ids, or ``failed_task`` and
``contract`` with what is wrong. What a transport itself fails with (a refused connection, no
answer in time) is its own to name, with the same reasons (``transport``, ``timeout``).
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass
from typing import Any

from services.green_agent.evaluation.answer_contract import (
    ContractViolation,
    Reply,
    ReplyPart,
    check_reply,
)
from services.green_agent.evaluation.bounds import clip
from services.green_agent.evaluation.client import (
    A2AVersion,
    TransportFailure,
    reply_from_v03_result,
    rpc_result,
)

#: Statuses the evaluator counts as the agent refusing work rather than failing.
_OVERLOADED = (429, 503)
#: Bytes of an error answer kept in a failure's message.
_DETAIL_BYTES = 200


def read_json(status: int, body: bytes, url: str) -> Any:
    """The JSON of an HTTP answer from ``url``.

    Raises:
        TransportFailure: a status outside 2xx (``overloaded`` for 429 and 503), or a body that
            is not JSON.

    """
    if not 200 <= status < 300:
        detail = body[:_DETAIL_BYTES].decode("utf-8", "replace")
        reason = "overloaded" if status in _OVERLOADED else "transport"
        raise TransportFailure(reason, f"HTTP {status} from {url}: {detail}")
    try:
        return json.loads(body)
    except ValueError as e:  # not JSON, or not UTF-8
        raise TransportFailure("transport", f"the answer of {url} is not JSON: {e}") from e


def _parts_v10(parts: Any) -> list[ReplyPart]:
    """1.0 parts (ProtoJSON: ``text``, ``data``, ``raw`` or ``url`` set) as reply parts."""
    out: list[ReplyPart] = []
    for part in parts if isinstance(parts, list) else []:
        if isinstance(part, dict) and "text" in part:
            out.append(ReplyPart("text", part["text"]))
        elif isinstance(part, dict) and "data" in part:
            out.append(ReplyPart("data", part["data"]))
        else:
            out.append(ReplyPart("other"))
    return out


def reply_from_v10_result(result: Any) -> Reply:
    """A 1.0 ``SendMessage`` result (ProtoJSON ``{"task"}`` or ``{"message"}``) as a reply.

    Raises:
        TransportFailure: it holds neither (what the SDK client says of an answer without a task).

    """
    if isinstance(result, dict) and isinstance(task := result.get("task"), dict):
        status = task.get("status") or {}
        state = str(status.get("state", "TASK_STATE_UNSPECIFIED"))
        message = status.get("message") or {}
        artifacts = task.get("artifacts") or []
        return Reply(
            state.removeprefix("TASK_STATE_").lower(),
            _parts_v10(message.get("parts")),
            [_parts_v10(a.get("parts")) for a in artifacts if isinstance(a, dict)],
        )
    if isinstance(result, dict) and isinstance(message := result.get("message"), dict):
        return Reply("message", _parts_v10(message.get("parts")))
    raise TransportFailure("transport", "the agent sent no task")


def read_reply(protocol: A2AVersion, status: int, body: bytes, url: str) -> Reply:
    """The final task of the answer to a query (``SendMessage`` or ``message/send``) from ``url``.

    A JSON-RPC error is ``transport`` over 1.0, as the a2a-sdk client reports it, and
    ``jsonrpc_error`` over 0.3, as the evaluator's 0.3 client does.

    Raises:
        TransportFailure: the answer holds no task (:func:`read_json`'s failures too).

    """
    answer = read_json(status, body, url)
    if protocol == "1.0":
        return reply_from_v10_result(rpc_result(answer, "transport"))
    return reply_from_v03_result(rpc_result(answer, "jsonrpc_error") or {})


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the evaluator makes of one answer: the ids, or the failure's reason and message."""

    doc_ids: list[str] | None = None
    reason: str | None = None
    message: str | None = None

    @property
    def ok(self) -> bool:
        """Whether the answer met the contract."""
        return self.doc_ids is not None

    @classmethod
    def failed(cls, failure: TransportFailure | ContractViolation) -> Verdict:
        """The verdict of a failure, its message cut as the evaluator's report cuts it."""
        return cls(None, failure.reason, clip(str(failure)))


def answer_verdict(
    protocol: A2AVersion,
    status: int,
    body: bytes,
    url: str,
    top_k: int,
    valid_ids: Collection[str],
    *,
    legacy: bool,
) -> Verdict:
    """The evaluator's verdict on the answer to a query: :func:`read_reply`, then the contract.

    ``legacy`` adds the 0.3 green agent's check that its joined parts read as the data part
    (:func:`~services.green_agent.evaluation.answer_contract.check_reply`).
    """
    try:
        reply = read_reply(protocol, status, body, url)
        return Verdict(check_reply(reply, top_k, valid_ids, legacy=legacy))
    except (TransportFailure, ContractViolation) as e:
        return Verdict.failed(e)


def _is_1_0(version: str) -> bool:
    # A patch version does not change the protocol: "1.0.2" is "1.0", as the SDK negotiates.
    return version == "1.0" or version.startswith("1.0.")


def jsonrpc_interface(card: Any, card_url: str) -> str:
    """The URL of the card's first JSON-RPC interface of protocol 1.0 (as the SDK picks it).

    Raises:
        TransportFailure: the card names none.

    """
    interfaces = card.get("supportedInterfaces") if isinstance(card, dict) else None
    for interface in interfaces if isinstance(interfaces, list) else []:
        if (
            isinstance(interface, dict)
            and interface.get("protocolBinding") == "JSONRPC"
            and _is_1_0(str(interface.get("protocolVersion", "")))
            and isinstance(interface.get("url"), str)
        ):
            return str(interface["url"])
    raise TransportFailure(
        "transport", f"the agent card at {card_url} has no JSON-RPC 1.0 interface"
    )


def v03_target(card: Any, card_url: str) -> str:
    """The ``url`` a 0.3 card names, where ``message/send`` goes.

    Raises:
        TransportFailure: the card names none.

    """
    target = card.get("url") if isinstance(card, dict) else None
    if not isinstance(target, str):
        raise TransportFailure("transport", f"the agent card at {card_url} has no url")
    return target
