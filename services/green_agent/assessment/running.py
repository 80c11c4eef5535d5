"""The assessments in flight: at most ``GREEN_MAX_RUNNING``, each cancelled if its caller leaves.

Every request that starts an assessment (0.3 ``message/send`` and ``message/stream``, 1.0
``SendMessage`` and ``SendStreamingMessage``) takes one of ``GREEN_MAX_RUNNING`` places before the
SDK sees it (:class:`Admission`, around the JSON-RPC route), and the assessment holds it until it
ends. A non-blocking send is answered as soon as its task exists while its assessment goes on,
so the place belongs to the execution, not to the request: the executor takes it over when it
starts (:meth:`Running.start`) and gives it back when it ends; a request the SDK refuses before
anything starts gives it back when it is answered. With every place taken, a request is refused
at once: HTTP 503 with ``Retry-After`` and a JSON-RPC error naming the setting, as the frame
refuses an overloaded server. So no burst of sends makes the evaluator a load amplifier against
a participant: at most ``GREEN_MAX_RUNNING`` assessments, each with its own bounded concurrency.

The SDK runs the executor in a task of its own, which goes on when the request that started it
is cancelled (its client hung up: :mod:`services.common.disconnect`). The handler cancels it
through this registry instead, so an agent stops calling its own backends for nobody. The
caller's name is part of the key: one caller cannot cancel another's request by reusing its
message id. A streamed assessment (``message/stream``, ``SendStreamingMessage``) is stopped by
its :class:`Admission`, which sees the caller hang up before the stream ends (the disconnect, or
the request cancelled) and cancels the execution that took its place over: the SDK's stream
swallows the cancellation and would leave the assessment running for nobody.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import MutableMapping
from contextvars import ContextVar
from typing import Any

from a2a.auth.user import User
from a2a.types import Message
from starlette.types import ASGIApp, Receive, Scope, Send

from services.common.guard.refusal import Refusal, send_refusal
from services.green_agent.assessment.metrics import REFUSED
from services.green_agent.assessment.metrics import RUNNING as RUNNING_GAUGE

SETTING = "GREEN_MAX_RUNNING"
#: The JSON-RPC methods that start an assessment, in A2A 0.3 and 1.0.
STARTS = frozenset({"message/send", "message/stream", "SendMessage", "SendStreamingMessage"})
#: When a refused caller may try again: an assessment takes minutes, not milliseconds.
RETRY_AFTER_S = 30

Key = tuple[str, str]


class Place:
    """One admitted assessment's place, given back once."""

    def __init__(self, running: Running) -> None:
        self._running = running
        self.taken_over = False  # by the execution, which then gives it back when it ends
        self._given_back = False
        self._execution: asyncio.Task[Any] | None = None

    def stop(self) -> None:
        """Cancel the execution that took this place over, if it still runs (its caller left)."""
        if self._execution is not None and not self._execution.done():
            self._execution.cancel()

    def give_back(self) -> None:
        """Free the place (a second call does nothing)."""
        if not self._given_back:
            self._given_back = True
            self._running.free()


#: The place of the request being handled: the SDK starts the executor in a task of its own,
#: which inherits the request's context, and so finds the place its request was admitted with.
_PLACE: ContextVar[Place | None] = ContextVar("assessment_place", default=None)


class Running:
    """The assessments admitted (at most ``limit``) and the executions in flight."""

    def __init__(self, limit: int) -> None:
        """Admit at most ``limit`` assessments at once."""
        self.limit = limit
        self.admitted = 0
        self._tasks: dict[Key, asyncio.Task[Any]] = {}
        RUNNING_GAUGE.set(0)

    @staticmethod
    def key(user: User | None, message: Message | None) -> Key:
        """The registry's key of a request: its caller's name (``""``: none) and message id."""
        name = user.user_name if user is not None and user.is_authenticated else ""
        return name, message.message_id if message is not None else ""

    def admit(self) -> Place | None:
        """A place for one more assessment, or None when ``limit`` are admitted."""
        if self.admitted >= self.limit:
            REFUSED.inc()
            return None
        self.admitted += 1
        RUNNING_GAUGE.set(self.admitted)
        return Place(self)

    def free(self) -> None:
        """One admitted assessment has ended (:meth:`Place.give_back` calls it)."""
        self.admitted -= 1
        RUNNING_GAUGE.set(self.admitted)

    def start(self, key: Key) -> None:
        """Register the current task (the execution) under ``key`` until it ends.

        It takes over the place its request was admitted with, and gives it back when it ends.
        """
        task = asyncio.current_task()
        if task is None:
            return
        place = _PLACE.get()
        if place is not None and not place.taken_over:
            place.taken_over = True
            place._execution = task
            task.add_done_callback(lambda _: place.give_back())
        if key[1]:
            self._tasks[key] = task
            task.add_done_callback(lambda _: self._tasks.pop(key, None))

    def cancel(self, key: Key) -> None:
        """Cancel the execution registered under ``key``, if it still runs."""
        task = self._tasks.pop(key, None)
        if task is not None:
            task.cancel()


def _envelope(body: bytes) -> dict[str, Any]:
    """The JSON-RPC envelope of a body the request guard has already checked (else empty)."""
    try:
        payload = json.loads(body)
    except ValueError:
        return {}
    return payload if isinstance(payload, dict) else {}


class Admission:
    """ASGI app around the A2A JSON-RPC route, admitting the requests that start assessments.

    Such a request takes a place of ``running`` first, or is refused (see the module docstring).
    """

    def __init__(self, app: ASGIApp, running: Running) -> None:
        """Admit the requests to ``app`` through ``running``."""
        self._app = app
        self._running = running

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Pass the request on with its place, or refuse it when there is none."""
        if scope["type"] != "http" or scope["method"] != "POST":
            await self._app(scope, receive, send)
            return
        body, more = b"", True
        while more:  # the guard has read and checked it whole: this reads it back from memory
            message = await receive()
            body += message.get("body", b"")
            more = message.get("more_body", False) and message["type"] == "http.request"
        replay = _replay(body, receive)
        envelope = _envelope(body)
        if envelope.get("method") not in STARTS:
            await self._app(scope, replay, send)
            return
        place = self._running.admit()
        if place is None:
            limit = self._running.limit
            reason = f"{limit} assessments are running, the most {SETTING} allows: send again later"
            request_id = envelope.get("id")
            refusal = Refusal(503, reason, retry_after=RETRY_AFTER_S, request_id=request_id)
            await send_refusal(send, refusal, jsonrpc_path=True)
            return
        answered = False

        async def answering(message: MutableMapping[str, Any]) -> None:
            nonlocal answered
            if message["type"] == "http.response.body" and not message.get("more_body", False):
                answered = True
            await send(message)

        async def watched() -> MutableMapping[str, Any]:
            message = await replay()
            if message["type"] == "http.disconnect" and not answered:
                place.stop()  # the caller left before the answer was whole
            return message

        token = _PLACE.set(place)
        try:
            await self._app(scope, watched, answering)
        except asyncio.CancelledError:
            if not answered:  # cancelled as its client hung up (services.common.disconnect)
                place.stop()
            raise
        finally:
            _PLACE.reset(token)
            if not place.taken_over:  # nothing started: the place was never the execution's
                place.give_back()


def _replay(body: bytes, receive: Receive) -> Receive:
    """``receive`` that first gives ``body`` whole, then what ``receive`` gives (a disconnect)."""
    sent = False

    async def replayed() -> dict[str, Any]:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return dict(await receive())

    return replayed
