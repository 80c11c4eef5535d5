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
holds the two clients to the same verdicts on the same answers, broken ones included. What an
answer means is read by :mod:`services.green_agent.load.answers`, the one reading Locust's users
(:mod:`services.green_agent.locustfile`) share.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from typing import Any, Literal
from urllib.parse import urlsplit

from services.common import jsonrpc
from services.common.http_pool import ConnectFailed, ConnectionBroken, OriginPool, request_target
from services.green_agent.evaluation.answer_contract import Reply
from services.green_agent.evaluation.client import (
    CARD_PATH,
    A2AVersion,
    AgentClient,
    TransportFailure,
    request_text,
    v03_request,
)
from services.green_agent.evaluation.egress import AllowedOrigins
from services.green_agent.evaluation.urls import below
from services.green_agent.load.answers import jsonrpc_interface, read_json, read_reply, v03_target
from services.telemetry.tracing import inject_headers

_JSON = [(b"accept", b"application/json"), (b"content-type", b"application/json")]
#: The version header a 1.0 client sends; a 0.3 client sends none.
_V10 = (b"a2a-version", b"1.0")


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
    ) -> tuple[int, bytes]:
        """Send one request; the answer's status and body, or the evaluator's failure to get one.

        What the answer means is read by :mod:`services.green_agent.load.answers`, as Locust's
        users of :mod:`services.green_agent.locustfile` read theirs.
        """
        trace = [(k.encode(), v.encode()) for k, v in inject_headers().items()]
        headers = [*_JSON, *self.headers, *extra, *trace]
        try:
            async with self.pool(url).request(method, request_target(url), headers, body) as answer:
                return answer.status, await answer.read()
        except (ConnectFailed, ConnectionBroken) as e:
            raise TransportFailure("transport", f"{type(e).__name__}: {e}") from e
        except ValueError as e:  # a URL a card named that no request line can carry
            raise TransportFailure("transport", f"cannot call {url!r}: {e}") from e

    async def aclose(self) -> None:
        pools, self._pools = list(self._pools.values()), {}
        for pool in pools:
            await pool.aclose()


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
            card = await self._within(self._card())
            self._endpoint = jsonrpc_interface(card, self._card_url)
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
            status, text = await self._origins.exchange("POST", self._endpoint, [_V10], body)
            return read_reply("1.0", status, text, self._endpoint)
        target = v03_target(await self._card(), self._card_url)
        status, text = await self._origins.exchange(
            "POST", target, [], _dump(v03_request(query, top_k))
        )
        return read_reply("0.3", status, text, target)

    async def _card(self) -> Any:
        status, text = await self._origins.exchange("GET", self._card_url, [], b"")
        return read_json(status, text, self._card_url)

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
