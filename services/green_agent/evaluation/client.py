"""A2A clients that send one retrieval request and return the final task as a :class:`Reply`.

``1.0``: the a2a-sdk client (card resolved once, ``SendMessage`` over a pooled connection).
``0.3``: what a green agent built on a2a-sdk 0.3 sends: fetch the card before every query, post
``message/send`` (no ``A2A-Version`` header) to the card's ``url``, read the task from the JSON-RPC
result. (That agent also builds a new HTTP client per query; here the connection is pooled, so
latency measures the agent rather than TLS-context set-up on the evaluator's side.)

Every answer is bounded in bytes and every query in total time
(:mod:`services.green_agent.evaluation.bounds`); the card's URL is the agent's URL with the card's
path joined to it, and a URL a card names with a query, a fragment or user information is refused
before any request goes there (:mod:`services.green_agent.evaluation.urls`).
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from typing import Any, Literal, Protocol

import httpx
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.client.client import Client
from a2a.helpers import get_data_parts
from a2a.types import Message, Part, Role, SendMessageRequest, Task, TaskState

from services.common import jsonrpc
from services.green_agent.evaluation import urls
from services.green_agent.evaluation.answer_contract import Reply, ReplyPart
from services.green_agent.evaluation.bounds import (
    DEADLINE_SETTING,
    AnswerBounds,
    AnswerEncoded,
    AnswerTooLarge,
    CappedTransport,
    found_in,
)
from services.green_agent.evaluation.egress import AllowedOrigins, refused_in
from services.telemetry.tracing import inject_headers

#: A version of the A2A protocol the evaluator can speak to an agent (the two clients below).
A2AVersion = Literal["1.0", "0.3"]
CARD_PATH = "/.well-known/agent-card.json"
#: What an answer may weigh and a query take when the caller names no bounds (the CLI's
#: ``eval``): the defaults of ``GREEN_MAX_ANSWER_BYTES`` and ``GREEN_QUERY_DEADLINE_S``.
DEFAULT_BOUNDS = AnswerBounds(max_bytes=4 << 20, deadline_s=120.0)


class TransportFailure(Exception):
    """No task came back: the agent was unreachable, too slow, or answered a JSON-RPC error."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


class AgentClient(Protocol):
    """Sends one retrieval request."""

    async def ask(self, query: str, top_k: int) -> Reply:
        """Send ``{"query", "top_k"}`` and return the final task."""
        ...

    async def aclose(self) -> None:
        """Release connections."""
        ...


def request_text(query: str, top_k: int) -> str:
    """Return the message text of a retrieval request."""
    return json.dumps({"query": query, "top_k": top_k})


def v03_request(query: str, top_k: int) -> dict[str, Any]:
    """The JSON-RPC request of a 0.3 ``message/send``, with what an a2a-sdk 0.3 green agent sends."""
    message = {
        "kind": "message",
        "messageId": uuid.uuid4().hex,
        "parts": [{"kind": "text", "text": request_text(query, top_k)}],
        "role": "user",
    }
    configuration = {"acceptedOutputModes": [], "blocking": True}
    params = {"configuration": configuration, "message": message}
    return jsonrpc.request("message/send", params, uuid.uuid4().hex)


def rpc_result(body: Any, reason: str) -> Any:
    """The ``result`` of a JSON-RPC answer; a JSON-RPC error is a failure labelled ``reason``."""
    if not isinstance(body, dict):
        raise TransportFailure("transport", "the answer is not a JSON-RPC object")
    try:
        return jsonrpc.result_or_error(body)
    except jsonrpc.RpcError as e:
        raise TransportFailure(reason, f"JSON-RPC {e}") from None
    except jsonrpc.MalformedResponse as e:
        raise TransportFailure(reason, f"{e}: {body['error']!r}") from None


async def _inject_trace(request: httpx.Request) -> None:
    request.headers.update(inject_headers())


def _http_client(
    timeout_s: float,
    max_connections: int,
    authorization: str | None,
    allowed: AllowedOrigins | None,
    bounds: AnswerBounds,
) -> httpx.AsyncClient:
    # With ``allowed``, a request to another origin (the URL a card names) is refused before it
    # leaves, with the token it would carry. Redirects are not followed: a 3xx is an answer.
    hooks = [allowed.guard] if allowed is not None else []
    limits = httpx.Limits(max_connections=max_connections)
    return httpx.AsyncClient(
        timeout=timeout_s,
        transport=CappedTransport(bounds.max_bytes, limits),
        headers={"authorization": authorization} if authorization else None,
        event_hooks={"request": [*hooks, _inject_trace]},
        follow_redirects=False,
    )


def _failure(error: Exception) -> TransportFailure:
    if isinstance(error, TransportFailure):
        return error
    if (refused := refused_in(error)) is not None:
        return TransportFailure("refused", str(refused))
    if (large := found_in(error, AnswerTooLarge)) is not None:
        return TransportFailure("too_large", str(large))
    if (encoded := found_in(error, AnswerEncoded)) is not None:
        return TransportFailure("transport", str(encoded))
    text = str(error) or type(error).__name__
    timed_out = (
        isinstance(error, httpx.TimeoutException) or "timeout" in type(error).__name__.lower()
    )
    if timed_out:
        return TransportFailure("timeout", f"no reply in time ({text})")
    status = error.response.status_code if isinstance(error, httpx.HTTPStatusError) else None
    if status in (429, 503) or "HTTP Error 503" in text:  # the SDK client keeps only the text
        return TransportFailure("overloaded", f"the agent refused the request ({text})")
    return TransportFailure("transport", f"{type(error).__name__}: {text}")


def _over_time(bounds: AnswerBounds) -> TransportFailure:
    return TransportFailure(
        "timeout", f"no whole answer within {bounds.deadline_s:g} s ({DEADLINE_SETTING})"
    )


def _card_named(url: str, allowed: AllowedOrigins | None) -> str | None:
    """Why the evaluator will not call ``url``, which an agent card names, or None."""
    if (reason := urls.refusal(url)) is not None:
        return f"{url}: {reason}"
    return allowed.first_refusal([url]) if allowed is not None else None


def _proto_parts(parts: Any) -> list[ReplyPart]:
    out: list[ReplyPart] = []
    for part in parts:
        if part.HasField("text"):
            out.append(ReplyPart("text", part.text))
        elif part.HasField("data"):
            out.append(ReplyPart("data", get_data_parts([part])[0]))
        else:
            out.append(ReplyPart("other"))
    return out


def reply_from_task(task: Task) -> Reply:
    """Convert a 1.0 task into a :class:`Reply`."""
    state = TaskState.Name(task.status.state).removeprefix("TASK_STATE_").lower()
    status = _proto_parts(task.status.message.parts) if task.status.HasField("message") else []
    return Reply(state, status, [_proto_parts(a.parts) for a in task.artifacts])


def _json_parts(parts: Any) -> list[ReplyPart]:
    """0.3 parts as reply parts; anything but a part (an object with a ``kind``) is "other"."""
    kinds: dict[str, Literal["text", "data"]] = {"text": "text", "data": "data"}
    out: list[ReplyPart] = []
    for part in parts if isinstance(parts, list) else []:
        kind = part.get("kind", "") if isinstance(part, dict) else ""
        out.append(ReplyPart(kinds.get(kind, "other"), part.get(kind) if kind else None))
    return out


def _object(value: Any) -> dict[str, Any]:
    """``value`` if it is a JSON object, else an empty one: a field of the wrong type is absent."""
    return value if isinstance(value, dict) else {}


def reply_from_v03_result(result: Any) -> Reply:
    """Convert a 0.3 ``message/send`` result (a task or a message) into a :class:`Reply`.

    A remote agent writes the result: one that is not a JSON object is a transport failure, a
    field of the wrong type (a ``status`` that is a string) reads as absent and a part or an
    artifact that is not an object as one nobody can read, so the answer fails the contract
    rather than the evaluator.

    Raises:
        TransportFailure: the result is not a JSON object.

    """
    if not isinstance(result, dict):
        raise TransportFailure("transport", f"the result is not a task: {type(result).__name__}")
    if result.get("kind") == "message":
        return Reply("message", _json_parts(result.get("parts")))
    status = _object(result.get("status"))
    message = _object(status.get("message"))
    raw = result.get("artifacts")
    # An artifact that is not an object stays an artifact, of one part nobody can read: the
    # answer then has more than one, and fails the contract, as an SDK client refuses it.
    artifacts = [
        _json_parts(a.get("parts")) if isinstance(a, dict) else [ReplyPart("other")]
        for a in (raw if isinstance(raw, list) else [])
    ]
    return Reply(str(status.get("state")), _json_parts(message.get("parts")), artifacts)


class SdkAgentClient:
    """Protocol 1.0 through the a2a-sdk client."""

    def __init__(self, http: httpx.AsyncClient, client: Client, bounds: AnswerBounds) -> None:
        self._http = http
        self._client = client
        self._bounds = bounds

    @classmethod
    async def connect(
        cls,
        url: str,
        timeout_s: float,
        max_connections: int,
        authorization: str | None = None,
        allowed: AllowedOrigins | None = None,
        bounds: AnswerBounds = DEFAULT_BOUNDS,
    ) -> SdkAgentClient:
        """Resolve the agent card once and build a client over a pooled connection."""
        http = _http_client(timeout_s, max_connections, authorization, allowed, bounds)
        try:
            card_url = str(_card_url(url))
            async with asyncio.timeout(bounds.deadline_s):
                # The whole URL as the base, no path: the resolver appends a path as text.
                card = await A2ACardResolver(http, card_url, "").get_agent_card()
            for named in (i.url for i in card.supported_interfaces):  # before any request there
                if (refused := _card_named(named, allowed)) is not None:
                    raise TransportFailure("refused", f"the agent card names {refused}")
            client = await create_client(card, ClientConfig(httpx_client=http, streaming=False))
        except TimeoutError:
            await http.aclose()
            raise _over_time(bounds) from None
        except Exception as e:
            await http.aclose()
            raise _failure(e) from e
        return cls(http, client, bounds)

    async def ask(self, query: str, top_k: int) -> Reply:
        """Send one request with ``SendMessage``, within the query's deadline."""
        message = Message(
            role=Role.ROLE_USER,
            message_id=uuid.uuid4().hex,
            parts=[Part(text=request_text(query, top_k))],
        )
        try:
            async with asyncio.timeout(self._bounds.deadline_s):
                async for event in self._client.send_message(SendMessageRequest(message=message)):
                    if event.HasField("task"):
                        return reply_from_task(event.task)
                    if event.HasField("message"):
                        return Reply("message", _proto_parts(event.message.parts))
        except TimeoutError:
            raise _over_time(self._bounds) from None
        except Exception as e:
            raise _failure(e) from e
        raise TransportFailure("transport", "the agent sent no task")

    async def aclose(self) -> None:
        """Close the client and its connections."""
        await self._client.close()
        await self._http.aclose()


class LegacyAgentClient:
    """Protocol 0.3 exactly as an a2a-sdk 0.3 green agent speaks it."""

    def __init__(
        self,
        url: str,
        timeout_s: float,
        max_connections: int,
        authorization: str | None = None,
        allowed: AllowedOrigins | None = None,
        bounds: AnswerBounds = DEFAULT_BOUNDS,
    ) -> None:
        """A client of the agent at ``url``; ``TransportFailure`` when that URL is refused."""
        self._card_url = _card_url(url)
        self._allowed = allowed
        self._bounds = bounds
        # Each query talks to two URLs, the card's and the one the card names, which may be two
        # hosts (a Service's short and long names): a pool of one per query would close and
        # reopen a connection for nearly every request.
        self._http = _http_client(timeout_s, 2 * max_connections, authorization, allowed, bounds)

    async def ask(self, query: str, top_k: int) -> Reply:
        """Fetch the card, post ``message/send`` to its ``url``, read the task (in one deadline)."""
        try:
            async with asyncio.timeout(self._bounds.deadline_s):
                body = await self._ask(query, top_k)
        except TimeoutError:
            raise _over_time(self._bounds) from None
        except Exception as e:
            raise _failure(e) from e
        if not isinstance(body, dict):
            raise TransportFailure("transport", "the answer is no JSON-RPC response object")
        return reply_from_v03_result(rpc_result(body, "jsonrpc_error") or {})

    async def _ask(self, query: str, top_k: int) -> Any:
        card = (await self._http.get(self._card_url)).raise_for_status().json()
        named = card["url"] if isinstance(card, dict) else None
        if not isinstance(named, str):
            raise TransportFailure("transport", "the agent card names no url")
        if (refused := _card_named(named, self._allowed)) is not None:
            raise TransportFailure("refused", f"the agent card names {refused}")
        response = await self._http.post(named, json=v03_request(query, top_k))
        return response.raise_for_status().json()

    async def aclose(self) -> None:
        """Close the connections."""
        await self._http.aclose()


def _card_url(url: str) -> httpx.URL:
    """The agent card's URL below the agent's ``url``; ``TransportFailure`` when it is refused."""
    try:
        return urls.below(url, CARD_PATH)
    except ValueError as e:
        raise TransportFailure("refused", f"the agent URL {e}") from None


async def connect(
    url: str,
    protocol: A2AVersion,
    timeout_s: float = 60.0,
    max_connections: int = 100,
    authorization: str | None = None,
    allowed: AllowedOrigins | None = None,
    bounds: AnswerBounds = DEFAULT_BOUNDS,
) -> AgentClient:
    """Open a client of the agent at ``url`` speaking ``protocol``.

    ``authorization`` is the ``Authorization`` header of every request (an agent with tokens);
    with ``allowed``, no request goes to another origin
    (:mod:`services.green_agent.evaluation.egress`); ``bounds`` bound every answer and query.
    """
    if protocol == "0.3":
        return LegacyAgentClient(url, timeout_s, max_connections, authorization, allowed, bounds)
    return await SdkAgentClient.connect(
        url, timeout_s, max_connections, authorization, allowed, bounds
    )


#: Seconds between two looks at an agent that does not answer yet.
WAIT_POLL_S = 1.0


async def wait_for_agent(url: str, seconds: float) -> None:
    """Until the agent at ``url`` serves its card (a generator started with the release).

    A Service answers only from Ready pods, so a card through it means one pod serves. Returns
    at once when ``seconds`` is 0 or less and the card answers; else polls for ``seconds``.

    Raises:
        TransportFailure: no card came within ``seconds``; the last problem is named.

    """
    card = _card_url(url)
    deadline = time.monotonic() + max(seconds, 0.0)
    async with httpx.AsyncClient(timeout=5) as http:
        while True:
            try:
                answer = await http.get(card)
                if answer.is_success:
                    return
                problem = f"HTTP {answer.status_code}"
            except httpx.TransportError as e:
                problem = f"{type(e).__name__}: {e}"
            if time.monotonic() >= deadline:
                raise TransportFailure(
                    "transport", f"no agent card at {card} after {seconds:g} s: {problem}"
                )
            await asyncio.sleep(WAIT_POLL_S)
