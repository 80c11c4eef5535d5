"""A stand-in for the AgentBeats gateway (RDI-Foundation/agentbeats-gateway, manifest tag v0.3).

In a leaderboard's scenario the gateway sits between the green agent and the participants. Given
``service_urls`` ({slot: agent base URL}, slots ``green``, ``purple1``..), ``participant_roles``
({slot: role}) and ``assessment_config``, it:

- reverse-proxies ``/<role>/<path>`` to that role's agent on its *proxy* port, forwarding the
  caller's method, query, body and headers as they are (Host included) and streaming the answer
  back (an SSE stream is relayed as it comes, never buffered);
- on ``/<role>/.well-known/agent-card.json`` (and the 0.3 ``agent.json``) rewrites every loopback
  URL of the card (``url``, ``supportedInterfaces[].url``, ``additionalInterfaces[].url``) to
  ``http://<proxy host:port>/<role>/...`` and then drops ``signatures``, so that whoever reads
  the card calls back through the proxy;
- waits until every agent of ``participant_roles`` serves its card, then sends the green agent
  one message over an A2A 0.3 client (JSON-RPC ``message/stream``, 300 s timeout), straight to
  its slot's URL, whose text is
  ``{"participants": {role: "http://127.0.0.1:<proxy port>/<role>"}, "config": assessment_config}``
  (a participant for every slot but ``green``);
- answers ``GET /`` on its *results* port with ``{"status": "running"}`` until the assessment
  ends, then ``{"status": <final task state>, "results": [every data part of the green agent's
  artifacts]}``: ``"completed"`` or ``"failed"`` (also when the request itself failed), data parts
  read as the gateway reads them (a text part that parses as JSON counts as one), and
  ``results`` empty unless the task completed.

:class:`Gateway` runs both servers on loopback ports bound up front, and the assessment, on an
event loop of its own in a thread, as the real gateway runs in a process of its own. Tests use
it to run our green agent as a leaderboard does (tests/agentbeats/test_gateway_run.py).
"""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Mapping, Sequence
from contextlib import asynccontextmanager, suppress
from types import TracebackType
from typing import Any, Self
from urllib.parse import urlsplit, urlunsplit

import httpx
import uvicorn
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.helpers import get_data_parts
from a2a.types import AgentInterface, Message, Part, Role, SendMessageRequest, TaskState
from a2a.utils.constants import PROTOCOL_VERSION_0_3
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

_log = logging.getLogger(__name__)

#: The gateway's timeout of its proxy's calls and of its client of the green agent.
TIMEOUT_S = 300.0
#: How long it waits for the agents' cards, and how often it asks.
READY_TIMEOUT_S = 30.0
READY_POLL_S = 0.5
CARD_PATHS = (".well-known/agent-card.json", ".well-known/agent.json")
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "0.0.0.0", "::1"})
#: Headers of an upstream answer not relayed: the body is relayed decoded, in chunks of its own.
_NOT_RELAYED = frozenset({"content-length", "content-encoding", "transfer-encoding", "connection"})
_METHODS = ["GET", "POST", "PUT", "DELETE", "PATCH"]


def _through_gateway(url: str, role: str, gateway: str) -> str | None:
    """``url`` on the gateway's proxy under ``/<role>``, or None when it is not a loopback URL."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or parts.hostname not in LOOPBACK_HOSTS:
        return None
    base = urlsplit(gateway.rstrip("/"))
    return urlunsplit(
        (base.scheme, base.netloc, f"/{role}{parts.path}", parts.query, parts.fragment)
    )


def rewrite_card(card: Any, role: str, gateway: str) -> Any:
    """The card with its loopback URLs on ``gateway`` (``http://host:port``) under ``/<role>``.

    Signatures are dropped when a URL changed (they no longer hold); any other card, or
    anything that is not a card, comes back as it was.
    """
    if not isinstance(card, dict):
        return card
    card = json.loads(json.dumps(card))  # a copy
    holders = [card]
    for key in ("supportedInterfaces", "additionalInterfaces"):
        if isinstance(card.get(key), list):
            holders += [i for i in card[key] if isinstance(i, dict)]
    changed = False
    for holder in holders:
        url = holder.get("url")
        new = _through_gateway(url, role, gateway) if isinstance(url, str) else None
        if new is not None and new != url:
            holder["url"], changed = new, True
    if changed:
        card.pop("signatures", None)
    return card


def proxy_app(routes: Mapping[str, str], seen: list[str] | None = None) -> Starlette:
    """The gateway's reverse proxy: ``/<role>/<path>`` to ``routes[role]`` (a base URL).

    Each request is noted in ``seen`` as ``"METHOD /role/path"`` (the gateway logs them).
    """
    http: httpx.AsyncClient | None = None

    @asynccontextmanager
    async def lifespan(_: Starlette) -> AsyncIterator[None]:
        nonlocal http
        async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
            yield

    async def forward(request: Request) -> Response:
        assert http is not None  # the lifespan has started
        role, path = request.path_params["role"], request.path_params.get("path", "")
        if seen is not None:
            seen.append(f"{request.method} {request.url.path}")
        if role not in routes:
            return Response(f"Unknown route: {role}", status_code=404)
        url = f"{routes[role].rstrip('/')}/{path}"
        if request.url.query:
            url += "?" + request.url.query
        upstream = http.build_request(
            request.method, url, headers=request.headers.raw, content=await request.body()
        )
        try:
            answer = await http.send(upstream, stream=True)
        except httpx.ConnectError:
            return Response(f"Failed to connect to upstream: {role}", status_code=502)
        except httpx.TimeoutException:
            return Response(f"Upstream timeout: {role}", status_code=504)
        headers = {k: v for k, v in answer.headers.items() if k.lower() not in _NOT_RELAYED}
        if path in CARD_PATHS:
            try:
                body = await answer.aread()
            finally:
                await answer.aclose()
            try:
                card = json.loads(body)
            except ValueError:
                return Response(body, answer.status_code, headers)
            gateway = str(request.base_url)  # from the Host the caller sent
            rewritten = rewrite_card(card, role, gateway)
            if rewritten != card:
                body = json.dumps(rewritten).encode()
            return Response(body, answer.status_code, headers)

        async def relay() -> AsyncIterator[bytes]:
            try:
                async for chunk in answer.aiter_bytes():
                    yield chunk
            finally:
                await answer.aclose()

        return StreamingResponse(relay(), answer.status_code, headers)

    return Starlette(
        lifespan=lifespan,
        routes=[
            Route("/{role}/{path:path}", forward, methods=_METHODS),
            Route("/{role}", forward, methods=_METHODS),
        ],
    )


def _state_name(state: int) -> str:
    """A task state as 0.3 spells it: ``completed``, ``input-required``."""
    name: str = TaskState.Name(state)
    return name.removeprefix("TASK_STATE_").lower().replace("_", "-")


def data_parts(parts: Sequence[Part]) -> list[Any]:
    """The data of ``parts`` as the gateway reads it: data parts and text parts holding JSON."""
    found: list[Any] = []
    for part in parts:
        if part.HasField("data"):
            found.extend(get_data_parts([part]))
        elif part.HasField("text"):
            with suppress(ValueError):
                found.append(json.loads(part.text))
    return found


async def _serves_card(http: httpx.AsyncClient, url: str) -> bool:
    try:
        await A2ACardResolver(http, url).get_agent_card()
    except Exception:  # any failure means: not ready yet
        return False
    return True


async def wait_for_cards(urls: Sequence[str], timeout_s: float = READY_TIMEOUT_S) -> bool:
    """Whether every agent at ``urls`` served its card within ``timeout_s``."""
    deadline = time.monotonic() + timeout_s
    async with httpx.AsyncClient(timeout=2.0) as http:
        while True:
            ready = await asyncio.gather(*(_serves_card(http, u) for u in urls))
            if all(ready):
                return True
            if time.monotonic() > deadline:
                return False
            await asyncio.sleep(READY_POLL_S)


async def assess(green_url: str, request: Mapping[str, Any]) -> dict[str, Any]:
    """Send ``request`` to the green agent over a 0.3 streaming client; the results answer.

    As the gateway does, the card's own URL is ignored: the client talks to ``green_url``.
    """
    message = Message(
        role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=json.dumps(request))]
    )
    state = "failed"
    artifacts: dict[str, list[Part]] = {}
    try:
        async with httpx.AsyncClient(timeout=TIMEOUT_S) as http:
            card = await A2ACardResolver(http, green_url).get_agent_card()
            del card.supported_interfaces[:]
            card.supported_interfaces.append(
                AgentInterface(
                    url=green_url, protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION_0_3
                )
            )
            client = await create_client(card, ClientConfig(httpx_client=http, streaming=True))
            async for event in client.send_message(SendMessageRequest(message=message)):
                if event.HasField("task"):
                    state = _state_name(event.task.status.state)
                    artifacts = {a.artifact_id: list(a.parts) for a in event.task.artifacts}
                elif event.HasField("status_update"):
                    state = _state_name(event.status_update.status.state)
                elif event.HasField("artifact_update"):
                    update = event.artifact_update
                    kept = artifacts.get(update.artifact.artifact_id, []) if update.append else []
                    artifacts[update.artifact.artifact_id] = kept + list(update.artifact.parts)
    except Exception:  # the gateway reports any failure as a failed assessment
        _log.exception("the assessment failed")
        return {"status": "failed", "results": []}
    if state != "completed":
        return {"status": state, "results": []}
    return {
        "status": state,
        "results": [d for parts in artifacts.values() for d in data_parts(parts)],
    }


def _loopback_socket(host: str) -> socket.socket:
    sock = socket.socket()
    sock.bind((host, 0))
    return sock


class Gateway:
    """The gateway's proxy, results endpoint and assessment, on loopback while the block runs.

    ``proxy_url`` and ``results_url`` are its two ports; :meth:`final_answer` polls the results
    endpoint as the leaderboard workflow does, until the assessment is no longer running.
    """

    def __init__(
        self,
        service_urls: Mapping[str, str],
        participant_roles: Mapping[str, str],
        assessment_config: Mapping[str, Any],
        *,
        host: str = "127.0.0.1",
        ready_timeout_s: float = READY_TIMEOUT_S,
    ) -> None:
        """Describe the run; nothing starts before the block is entered."""
        self._service_urls = dict(service_urls)
        self._roles = dict(participant_roles)
        self._config = dict(assessment_config)
        self._ready_timeout_s = ready_timeout_s
        self._sockets = [_loopback_socket(host), _loopback_socket(host)]
        ports = [s.getsockname()[1] for s in self._sockets]
        self.proxy_url, self.results_url = (f"http://{host}:{p}" for p in ports)
        self._proxy_port = ports[0]
        self.answer: dict[str, Any] = {"status": "running"}
        #: Every request the proxy took, as ``"METHOD /role/path"``.
        self.proxied: list[str] = []
        routes = {
            role: self._service_urls[slot]
            for slot, role in self._roles.items()
            if slot in self._service_urls
        }
        results = Starlette(routes=[Route("/", self._results, methods=["GET"])])
        self._servers = [
            uvicorn.Server(
                uvicorn.Config(app, log_level="warning", lifespan="on", timeout_graceful_shutdown=5)
            )
            for app in (proxy_app(routes, self.proxied), results)
        ]
        self._loop: asyncio.AbstractEventLoop | None = None
        self._assessment: asyncio.Task[None] | None = None
        self._thread = threading.Thread(target=self._serve, daemon=True)

    async def _results(self, _: Request) -> Response:
        return JSONResponse(self.answer)

    def _serve(self) -> None:
        asyncio.run(self._main())

    async def _main(self) -> None:
        self._loop = asyncio.get_running_loop()
        self._assessment = asyncio.create_task(self._run_assessment())
        try:
            await asyncio.gather(
                *(
                    server.serve([sock])
                    for server, sock in zip(self._servers, self._sockets, strict=True)
                )
            )
        finally:
            self._assessment.cancel()
            with suppress(asyncio.CancelledError):
                await self._assessment

    async def _run_assessment(self) -> None:
        agents = [self._service_urls[slot] for slot in self._roles if slot in self._service_urls]
        if not await wait_for_cards(agents, self._ready_timeout_s):
            self.answer = {"status": "failed", "error": "Timeout: agents not ready"}
            return
        proxy = f"http://127.0.0.1:{self._proxy_port}"
        participants = {
            role: f"{proxy}/{role}"
            for slot, role in self._roles.items()
            if slot != "green" and slot in self._service_urls
        }
        request = {"participants": participants, "config": self._config}
        self.answer = await assess(self._service_urls["green"], request)

    def final_answer(self, timeout_s: float = TIMEOUT_S) -> dict[str, Any]:
        """``GET /`` of the results endpoint once its status is no longer ``running``."""
        deadline = time.monotonic() + timeout_s
        while True:
            answer: dict[str, Any] = httpx.get(self.results_url, timeout=10).json()
            if answer.get("status") != "running":
                return answer
            if time.monotonic() > deadline:
                raise TimeoutError(f"the assessment still runs after {timeout_s:g} s")
            time.sleep(0.2)

    def __enter__(self) -> Self:
        """Start serving and send the assessment; returns once both ports serve."""
        self._thread.start()
        deadline = time.monotonic() + 10
        while not all(server.started for server in self._servers):
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the gateway did not start")
            time.sleep(0.01)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop the assessment, if it still runs, and both servers."""
        if self._loop is not None and self._assessment is not None:
            self._loop.call_soon_threadsafe(self._assessment.cancel)
        for server in self._servers:
            server.should_exit = True
        if self._thread.is_alive():
            self._thread.join(30)
        for sock in self._sockets:
            sock.close()
