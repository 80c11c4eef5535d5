"""A request whose client goes is cancelled; one that was answered, or the server's own stop, is not
mistaken for it (services/common/disconnect.py; the servers' side: test_abandoned_work.py)."""

from __future__ import annotations

import asyncio
from collections.abc import MutableMapping
from typing import Any

import pytest

from services.common.disconnect import run_until_disconnect
from services.telemetry.http import ABANDONED

WAIT_S = 5.0  # bound of every wait: only a hang takes this long


class Client:
    """The server side of one connection: the client's messages, and what was sent to it."""

    def __init__(self) -> None:
        self.gone = asyncio.Event()
        self.sent: list[MutableMapping[str, Any]] = []

    async def receive(self) -> MutableMapping[str, Any]:
        await self.gone.wait()
        return {"type": "http.disconnect"}

    async def send(self, message: MutableMapping[str, Any]) -> None:
        self.sent.append(message)


async def _answer(send: Any) -> None:
    await send({"type": "http.response.start", "status": 200, "headers": []})
    await send({"type": "http.response.body", "body": b"{}", "more_body": False})


class Working:
    """A handler that reads its body, then works until it is cancelled."""

    def __init__(self) -> None:
        self.started = asyncio.Event()
        self.cancelled = asyncio.Event()

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        assert (await receive())["body"] == b"{}"  # the body the guard read, replayed
        self.started.set()
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            self.cancelled.set()
            raise


async def test_a_client_that_goes_before_the_answer_cancels_the_handler() -> None:
    client, app = Client(), Working()
    scope: dict[str, Any] = {}
    request = asyncio.ensure_future(
        run_until_disconnect(app, scope, client.receive, client.send, b"{}")
    )
    await asyncio.wait_for(app.started.wait(), WAIT_S)
    client.gone.set()
    await asyncio.wait_for(request, WAIT_S)  # returns: the request ended, nobody to answer
    assert app.cancelled.is_set() and scope[ABANDONED] is True and client.sent == []


async def test_a_client_that_goes_after_its_answer_leaves_the_handler_to_finish() -> None:
    client, finished = Client(), asyncio.Event()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await _answer(send)
        client.gone.set()  # the client reads its answer and closes the connection
        await asyncio.sleep(0.01)  # work after the answer (metrics, the log line)
        finished.set()

    scope: dict[str, Any] = {}
    await asyncio.wait_for(
        run_until_disconnect(app, scope, client.receive, client.send, b"{}"), WAIT_S
    )
    assert finished.is_set() and ABANDONED not in scope and len(client.sent) == 2


async def test_the_handler_sees_the_disconnect_as_its_next_message() -> None:
    client = Client()
    seen: list[str] = []

    async def app(scope: Any, receive: Any, send: Any) -> None:
        await receive()  # the body
        client.gone.set()
        seen.append((await receive())["type"])
        await _answer(send)

    scope: dict[str, Any] = {}
    await asyncio.wait_for(
        run_until_disconnect(app, scope, client.receive, client.send, b"{}"), WAIT_S
    )
    assert seen == ["http.disconnect"]


async def test_stopping_the_server_cancels_the_request_and_is_not_an_abandonment() -> None:
    client, app = Client(), Working()
    scope: dict[str, Any] = {}
    request = asyncio.ensure_future(
        run_until_disconnect(app, scope, client.receive, client.send, b"{}")
    )
    await asyncio.wait_for(app.started.wait(), WAIT_S)
    request.cancel()  # what uvicorn does to a request still running when it stops
    with pytest.raises(asyncio.CancelledError):
        await request
    assert app.cancelled.is_set() and ABANDONED not in scope


async def test_a_handler_failure_reaches_the_caller() -> None:
    client = Client()

    async def app(scope: Any, receive: Any, send: Any) -> None:
        raise ValueError("the handler failed")

    with pytest.raises(ValueError, match="the handler failed"):
        await run_until_disconnect(app, {}, client.receive, client.send, b"{}")
