"""The load generator's A2A client: the evaluator's requests, at a fraction of the CPU.

A load run asks thousands of queries a minute from one process, and what the generator spends per
request caps the load one core can drive. The evaluator's clients
(:mod:`services.green_agent.evaluation.client`) go through the a2a-sdk and httpx, whose layers
cost several times the exchange itself (``make bench-load`` measures it against Locust's
client, ``docs/observability.md`` has the figures). This client sends the same bytes that they
send and reads the same answers into the same :class:`Reply`, over the keep-alive httptools pool
the purple agent's searches use (:mod:`services.common.http_pool`): one JSON body written per
request, the answer parsed in C, read into plain dicts.

It speaks both versions as the evaluator's clients do. ``1.0``: the card resolved once, then
``SendMessage`` with ``A2A-Version: 1.0`` to the card's JSON-RPC 1.0 interface. ``0.3``: as an
a2a-sdk 0.3 green agent, the card fetched before every query and ``message/send`` posted to the
``url`` it names. Failures are the evaluator's :class:`TransportFailure` with the same reasons,
so a load report's errors mean what an evaluation's mean; ``tests/integration/test_load_client.py``
holds the two clients to the same verdicts on the same answers, broken ones included.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any, Literal
from urllib.parse import urlsplit

from services.common import jsonrpc
from services.common.http_pool import ConnectFailed, ConnectionBroken, OriginPool, request_target
from services.green_agent.evaluation.answer_contract import Reply, ReplyPart
from services.green_agent.evaluation.client import (
    CARD_PATH,
    A2AVersion,
    AgentClient,
    TransportFailure,
    reply_from_v03_result,
    request_text,
    rpc_result,
    v03_request,
)
from services.green_agent.evaluation.egress import AllowedOrigins
from services.green_agent.evaluation.urls import below
from services.telemetry.tracing import inject_headers

_JSON = [(b"accept", b"application/json"), (b"content-type", b"application/json")]
#: The version header a 1.0 client sends; a 0.3 client sends none.
_V10 = (b"a2a-version", b"1.0")
#: Statuses the evaluator counts as the agent refusing work rather than failing.
_OVERLOADED = (429, 503)
#: Bytes of an error answer kept in a failure's message.
_DETAIL_BYTES = 200


class _Origins:
    """One keep-alive pool per origin the client talks to, each origin checked once."""

    def __init__(
        self, max_connections: int, authorization: str | None, allowed: AllowedOrigins | None
    ) -> None:
        self._max = max_connections
        self._allowed = allowed
        self._pools: dict[str, OriginPool] = {}
        self.headers = [(b"authorization", authorization.encode())] if authorization else []

    def pool(self, url: str) -> OriginPool:
        """The pool of ``url``'s origin; refused (before anything is sent) outside ``allowed``."""
        parts = urlsplit(url)
        origin = f"{parts.scheme}://{parts.netloc}"
        pool = self._pools.get(origin)
        if pool is None:
            if parts.scheme not in ("http", "https") or not parts.hostname:
                raise TransportFailure("transport", f"{url}: not an http or https URL")
            if self._allowed is not None and (refused := self._allowed.first_refusal([url])):
                raise TransportFailure("refused", f"refused to call {refused}")
            pool = self._pools[origin] = OriginPool(url, self._max)
        return pool

    async def exchange(
        self,
        method: Literal["GET", "POST"],
        url: str,
        extra: list[tuple[bytes, bytes]],
        body: bytes,
    ) -> Any:
        """Send one request; the answer's JSON, or the evaluator's failure for what went wrong."""
        trace = [(k.encode(), v.encode()) for k, v in inject_headers().items()]
        headers = [*_JSON, *self.headers, *extra, *trace]
        try:
            async with self.pool(url).request(method, request_target(url), headers, body) as answer:
                status, text = answer.status, await answer.read()
        except (ConnectFailed, ConnectionBroken) as e:
            raise TransportFailure("transport", f"{type(e).__name__}: {e}") from e
        except ValueError as e:  # a URL a card named that no request line can carry
            raise TransportFailure("transport", f"cannot call {url!r}: {e}") from e
        if not 200 <= status < 300:
            detail = text[:_DETAIL_BYTES].decode("utf-8", "replace")
            reason = "overloaded" if status in _OVERLOADED else "transport"
            raise TransportFailure(reason, f"HTTP {status} from {url}: {detail}")
        try:
            return json.loads(text)
        except ValueError as e:  # not JSON, or not UTF-8
            raise TransportFailure("transport", f"the answer of {url} is not JSON: {e}") from e

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()


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


class LeanAgentClient:
    """Either protocol over the keep-alive pool; what the generator asks with."""

    def __init__(
        self,
        url: str,
        protocol: A2AVersion,
        timeout_s: float,
        max_connections: int,
        authorization: str | None = None,
        allowed: AllowedOrigins | None = None,
    ) -> None:
        self._card_url = str(below(url, CARD_PATH))  # a path joined, never text appended
        self._protocol = protocol
        self._timeout_s = timeout_s
        # A 0.3 query talks to two URLs, the card's and the one it names, maybe on two hosts
        # (a Service's short and long names): each origin has a pool as large as the run.
        self._origins = _Origins(max_connections, authorization, allowed)
        self._endpoint: str | None = None  # 1.0: the card's JSON-RPC interface, once resolved

    async def resolve(self) -> None:
        """1.0: read the card once and pick its JSON-RPC 1.0 interface (0.3 reads it per query).

        Raises:
            TransportFailure: no card, no such interface, or one outside the allowed origins.

        """
        if self._protocol == "1.0":
            card = await self._within(self._origins.exchange("GET", self._card_url, [], b""))
            self._endpoint = _jsonrpc_interface(card, self._card_url)
            self._origins.pool(self._endpoint)  # refused now, not at the first query

    async def ask(self, query: str, top_k: int) -> Reply:
        """Send ``{"query", "top_k"}`` and return the final task."""
        reply: Reply = await self._within(self._ask(query, top_k))
        return reply

    async def _within(self, exchange: Any) -> Any:
        try:
            async with asyncio.timeout(self._timeout_s):
                return await exchange
        except TimeoutError:
            raise TransportFailure("timeout", f"no reply in time ({self._timeout_s:g} s)") from None

    async def _ask(self, query: str, top_k: int) -> Reply:
        if self._protocol == "1.0":
            if self._endpoint is None:
                raise TransportFailure("transport", "the agent card is not resolved")
            body = v10_request(query, top_k)
            answer = await self._origins.exchange("POST", self._endpoint, [_V10], body)
            return reply_from_v10_result(rpc_result(answer, "transport"))
        card = await self._origins.exchange("GET", self._card_url, [], b"")
        target = card.get("url") if isinstance(card, dict) else None
        if not isinstance(target, str):
            raise TransportFailure("transport", f"the agent card at {self._card_url} has no url")
        body = _dump(v03_request(query, top_k))
        answer = await self._origins.exchange("POST", target, [], body)
        return reply_from_v03_result(rpc_result(answer, "jsonrpc_error") or {})

    async def aclose(self) -> None:
        """Close the idle connections."""
        await self._origins.aclose()


def _dump(payload: dict[str, Any]) -> bytes:
    return json.dumps(payload, separators=(",", ":")).encode()


def v10_request(query: str, top_k: int) -> bytes:
    """The body of a 1.0 ``SendMessage``, with what the a2a-sdk client writes in it."""
    message = {
        "messageId": uuid.uuid4().hex,
        "role": "ROLE_USER",
        "parts": [{"text": request_text(query, top_k)}],
    }
    params = {"message": message, "configuration": {}}
    return _dump(jsonrpc.request("SendMessage", params, str(uuid.uuid4())))


def _is_1_0(version: str) -> bool:
    # A patch version does not change the protocol: "1.0.2" is "1.0", as the SDK negotiates.
    return version == "1.0" or version.startswith("1.0.")


def _jsonrpc_interface(card: Any, card_url: str) -> str:
    """The URL of the card's first JSON-RPC interface of protocol 1.0 (as the SDK picks it)."""
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


async def connect_lean(
    url: str,
    protocol: A2AVersion,
    timeout_s: float = 60.0,
    max_connections: int = 100,
    authorization: str | None = None,
    allowed: AllowedOrigins | None = None,
) -> AgentClient:
    """A lean client of the agent at ``url`` speaking ``protocol``, its card resolved (1.0).

    Raises:
        TransportFailure: the card could not be read or names no usable interface.

    """
    client = LeanAgentClient(url, protocol, timeout_s, max_connections, authorization, allowed)
    try:
        await client.resolve()
    except BaseException:
        await client.aclose()
        raise
    return client
