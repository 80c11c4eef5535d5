"""A request whose client has gone is cancelled: queued work is dropped, not done for nobody.

uvicorn does not cancel a handler when its client disconnects: the handler runs to its end and
writes the answer to a closed socket. Under overload that means a server works through its queue
for clients that gave up long ago (a purple agent whose MCP call timed out, a load balancer that
closed the connection). Once the guard has read a request's body, the only message still to come
from the client is the disconnect, so it is awaited beside the handler, and the handler is
cancelled if it comes before the answer is complete. A search waiting for a worker thread is
then never started; one already running finishes (threads cannot be interrupted) and its
result is dropped. The request is recorded with the outcome ``abandoned``.
"""

from __future__ import annotations

import asyncio

from starlette.types import ASGIApp, Message, Receive, Scope, Send

from services.telemetry.http import ABANDONED


async def run_until_disconnect(
    app: ASGIApp, scope: Scope, receive: Receive, send: Send, body: bytes
) -> None:
    """Run ``app`` on a request whose ``body`` was read already; cancel it if the client goes."""
    gone = asyncio.Event()
    replayed = False
    answered = False

    async def app_receive() -> Message:
        nonlocal replayed
        if not replayed:
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}
        await gone.wait()
        return {"type": "http.disconnect"}

    async def app_send(message: Message) -> None:
        nonlocal answered
        if message["type"] == "http.response.body" and not message.get("more_body", False):
            answered = True
        await send(message)

    # The handler runs in a task of its own, which the watcher cancels; this coroutine only
    # awaits it (no asyncio.wait, and the watcher is not awaited once cancelled): every request
    # of both servers passes here, and each extra turn of the event loop costs it CPU.
    handler = asyncio.ensure_future(app(scope, app_receive, app_send))

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass  # nothing else can come after a complete body; ignore it if it does
        gone.set()
        await asyncio.sleep(0)  # a handler awaiting the disconnect reads it first, and may answer
        if not answered:
            scope[ABANDONED] = True
            handler.cancel()

    watcher = asyncio.ensure_future(watch())
    try:
        await handler  # if this coroutine is cancelled (server shutdown), so is the handler
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if (task is not None and task.cancelling()) or not scope.get(ABANDONED):
            raise
    finally:
        watcher.cancel()
