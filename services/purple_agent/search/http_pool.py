"""Keep-alive HTTP/1.1 connections to one origin, over asyncio streams, framed by h11.

What the MCP hot path needs of an HTTP client is small: POST a body to one origin, read the
answer, keep the connection for the next request (and a GET for readiness). httpx and httpx2
do much more, and cost accordingly in CPU per query and memory: this pool saves the agent more
than the fifth of its CPU that a path of our own must save to stay (measured by
``python -m devtools.bench.http_pool_ab``, the figures in ``docs/performance.md``). h11 does the
HTTP framing (content length, chunks, keep-alive), so nothing about the protocol is parsed by
hand.

A connection goes back to the pool only after a complete exchange; one whose request was
cancelled, failed or left unread is closed, which also tells the server its caller has gone.
"""

from __future__ import annotations

import asyncio
import ssl
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from urllib.parse import urlsplit

import h11

READ_BYTES = 65536


def request_target(url: str) -> str:
    """The request target of ``url``: its path (``/`` if none) and query."""
    parsed = urlsplit(url)
    return (parsed.path or "/") + (f"?{parsed.query}" if parsed.query else "")


class ConnectFailed(Exception):
    """No connection to the origin could be opened: nothing was sent."""


class ConnectionBroken(Exception):
    """The connection failed or closed during the exchange."""


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer
        self.h11 = h11.Connection(h11.CLIENT)

    def usable(self) -> bool:
        """Idle and still open: the server has not closed it while it waited."""
        return (
            self.h11.our_state is h11.IDLE
            and not self.reader.at_eof()
            and not self.writer.is_closing()
        )

    async def next_event(self) -> object:
        """The next event (a PAUSED or ConnectionClosed is not one callers expect)."""
        while True:
            event = self.h11.next_event()
            if event is not h11.NEED_DATA:
                return event
            self.h11.receive_data(await self.reader.read(READ_BYTES))

    def close(self) -> None:
        self.writer.close()


class Response:
    """A response whose head has arrived; its body is read with :meth:`chunks` or :meth:`read`."""

    def __init__(self, connection: _Connection, head: h11.Response) -> None:
        self._connection = connection
        self.status = head.status_code
        self.headers = {k.decode("latin-1"): v.decode("latin-1") for k, v in head.headers}
        self.complete = False

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives."""
        while not self.complete:
            event = await self._connection.next_event()
            if isinstance(event, h11.Data):
                yield bytes(event.data)
            elif isinstance(event, h11.EndOfMessage):
                self.complete = True
            else:
                raise ConnectionBroken(f"unexpected {type(event).__name__} in a response body")

    async def read(self, limit: int | None = None) -> bytes:
        """The whole body (its first ``limit`` bytes, leaving the connection unusable)."""
        body = bytearray()
        async for chunk in self.chunks():
            body += chunk
            if limit is not None and len(body) >= limit:
                break
        return bytes(body[:limit])


class OriginPool:
    """Connections to the origin of ``url``, at most ``max_connections`` of them busy at once."""

    def __init__(self, url: str, max_connections: int) -> None:
        parsed = urlsplit(url)
        self._tls = ssl.create_default_context() if parsed.scheme == "https" else None
        self._host = parsed.hostname or ""
        self._port = parsed.port or (443 if self._tls else 80)
        self.authority = parsed.netloc.rpartition("@")[2].encode()
        self._slots = asyncio.Semaphore(max_connections)
        self._idle: list[_Connection] = []

    async def _connect(self) -> _Connection:
        try:
            reader, writer = await asyncio.open_connection(
                self._host, self._port, ssl=self._tls, limit=READ_BYTES
            )
        except OSError as e:
            raise ConnectFailed(f"{type(e).__name__}: {e}") from e
        return _Connection(reader, writer)

    def _idle_connection(self) -> _Connection | None:
        while self._idle:
            connection = self._idle.pop()
            if connection.usable():
                return connection
            connection.close()
        return None

    def post(
        self, target: str, headers: list[tuple[bytes, bytes]], body: bytes
    ) -> AbstractAsyncContextManager[Response]:
        """POST ``body`` to ``target``; the response once its head has arrived."""
        return self.request("POST", target, headers, body)

    @asynccontextmanager
    async def request(
        self, method: str, target: str, headers: list[tuple[bytes, bytes]], body: bytes = b""
    ) -> AsyncIterator[Response]:
        """Send one request; the response once its head has arrived."""
        async with self._slots:
            connection = self._idle_connection() or await self._connect()
            reusable = False
            try:
                request = h11.Request(
                    method=method,
                    target=target,
                    headers=[
                        (b"host", self.authority),
                        (b"content-length", b"%d" % len(body)),
                        *headers,
                    ],
                )
                h = connection.h11
                sent = (h.send(request), h.send(h11.Data(data=body)), h.send(h11.EndOfMessage()))
                connection.writer.write(b"".join(part for part in sent if part))
                event = await connection.next_event()
                while isinstance(event, h11.InformationalResponse):
                    event = await connection.next_event()
                if not isinstance(event, h11.Response):
                    raise ConnectionBroken(
                        f"unexpected {type(event).__name__} instead of a response"
                    )
                response = Response(connection, event)
                yield response
                reusable = response.complete and h.our_state is h.their_state is h11.DONE
            except (OSError, EOFError, h11.ProtocolError) as e:
                raise ConnectionBroken(f"{type(e).__name__}: {e}") from e
            finally:
                if reusable:
                    connection.h11.start_next_cycle()
                    self._idle.append(connection)
                else:
                    connection.close()

    async def aclose(self) -> None:
        """Close the idle connections (busy ones close when their exchange ends)."""
        idle, self._idle = self._idle, []
        for connection in idle:
            connection.close()
            with suppress(OSError):
                await connection.writer.wait_closed()
