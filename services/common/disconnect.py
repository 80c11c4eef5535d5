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
import contextlib

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

    async def watch() -> None:
        while (await receive())["type"] != "http.disconnect":
            pass  # nothing else can come after a complete body; ignore it if it does
        gone.set()

    handler = asyncio.ensure_future(app(scope, app_receive, app_send))
    watcher = asyncio.ensure_future(watch())
    try:
        await asyncio.wait({handler, watcher}, return_when=asyncio.FIRST_COMPLETED)
        if not handler.done() and not answered:
            handler.cancel()
            scope[ABANDONED] = True
            with contextlib.suppress(asyncio.CancelledError):
                await handler
            return
        await handler
    finally:
        watcher.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await watcher
        if not handler.done():  # this coroutine itself was cancelled (server shutdown)
            handler.cancel()
