"""Keep-alive HTTP/1.1 connections to one origin, over asyncio streams, parsed by httptools.

What a hot path needs of an HTTP client is small: POST a body to one origin, read the answer,
keep the connection for the next request (and a GET for a card or readiness). Two hot paths use
this pool: the purple agent's searches (:mod:`services.purple_agent.search`) and the load
generator's requests (:mod:`services.green_agent.load.client`). httpx and httpx2 do much more,
and cost accordingly in CPU per request and memory: this pool saves the agent more than the
fifth of its CPU that a path of our own must save to stay (measured by
``python -m devtools.bench.http_pool_ab``, the figures in ``docs/performance.md``), and the
generator most of its own (``make bench-load``). Answers are
parsed by httptools (llhttp, in C: the parser uvicorn serves both our servers with), so nothing
about the framing (content length, chunks, keep-alive, a body that ends with the connection) is
parsed by hand; a request is one head of checked header lines and its body.

A connection goes back to the pool only after a complete exchange that keeps it alive; one whose
request was cancelled, failed or left unread is closed, which also tells the server its caller
has gone.
"""

from __future__ import annotations

import asyncio
import re
import ssl
from collections.abc import AsyncIterator
from contextlib import AbstractAsyncContextManager, asynccontextmanager, suppress
from urllib.parse import urlsplit

import httptools

READ_BYTES = 65536
#: RFC 9110 token characters (a header's name), and what a request target or header value
#: must not hold: a line break or NUL would end the line early (a second, injected header).
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_BREAKS = re.compile(rb"[\r\n\0]")
_TARGET = re.compile(r"[^\s\x00-\x1f\x7f]+")
_METHODS = ("GET", "POST")


def request_target(url: str) -> str:
    """The request target of ``url``: its path (``/`` if none) and query."""
    parsed = urlsplit(url)
    return (parsed.path or "/") + (f"?{parsed.query}" if parsed.query else "")


class ConnectFailed(Exception):
    """No connection to the origin could be opened: nothing was sent."""


class ConnectionBroken(Exception):
    """The connection failed or closed during the exchange."""


class _Answer:
    """httptools' callbacks for the answer to one request: its final head, then its body."""

    def __init__(self) -> None:
        self.parser = httptools.HttpResponseParser(self)
        self.status = 0
        self.headers: dict[str, str] = {}
        self.body: list[bytes] = []
        self.head = False  # the final (not 1xx) head has arrived
        self.complete = False
        self.until_eof = False  # neither a length nor chunks: the body ends with the connection
        self.extra = False  # bytes after the answer (a connection not to reuse)
        self.keep_alive = False

    def on_message_begin(self) -> None:
        if self.complete:
            self.extra = True
        elif not self.head:
            self.headers = {}  # the final head after an interim one starts afresh

    def on_header(self, name: bytes, value: bytes) -> None:
        if not self.extra:
            self.headers[name.decode("latin-1").lower()] = value.decode("latin-1")

    def on_headers_complete(self) -> None:
        if self.extra:
            return
        self.status = self.parser.get_status_code()
        if 100 <= self.status < 200:
            return  # an interim answer (100 Continue, 103 Early Hints): the final one follows
        self.head = True
        chunked = "chunked" in self.headers.get("transfer-encoding", "").lower()
        self.until_eof = "content-length" not in self.headers and not chunked

    def on_body(self, body: bytes) -> None:
        if not self.extra:
            self.body.append(body)

    def on_message_complete(self) -> None:
        if self.head and not self.extra:
            self.complete = True
            # Read here: the parser forgets the message's connection flags once it returns.
            self.keep_alive = self.parser.should_keep_alive()


class _Connection:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    def usable(self) -> bool:
        """Still open: the server has not closed it while it waited."""
        return not self.reader.at_eof() and not self.writer.is_closing()

    async def receive(self, answer: _Answer) -> None:
        """Read what arrives next into ``answer``; an early end of the connection is broken."""
        data = await self.reader.read(READ_BYTES)
        if not data:
            if answer.head and answer.until_eof:
                answer.complete = True
                return
            raise ConnectionBroken("the server closed the connection before its answer ended")
        try:
            answer.parser.feed_data(data)
        except (httptools.HttpParserError, httptools.HttpParserUpgrade) as e:
            # An upgrade (101) is nothing we asked for; httptools raises it apart from errors.
            raise ConnectionBroken(f"{type(e).__name__}: {e}") from e

    def close(self) -> None:
        self.writer.close()


class Response:
    """A response whose head has arrived; its body is read with :meth:`chunks` or :meth:`read`."""

    def __init__(self, connection: _Connection, answer: _Answer) -> None:
        self._connection = connection
        self._answer = answer
        self.status = answer.status
        self.headers = answer.headers
        self.complete = False

    async def chunks(self) -> AsyncIterator[bytes]:
        """The body as it arrives."""
        answer = self._answer
        while True:
            pieces, answer.body = answer.body, []
            for piece in pieces:
                yield piece
            if answer.complete:
                self.complete = True
                return
            await self._connection.receive(answer)

    async def read(self, limit: int | None = None) -> bytes:
        """The whole body (its first ``limit`` bytes, leaving the connection unusable)."""
        body = bytearray()
        async for chunk in self.chunks():
            body += chunk
            if limit is not None and len(body) >= limit:
                break
        return bytes(body[:limit])

    @property
    def reusable(self) -> bool:
        """Read to its end, on a connection both sides keep open."""
        answer = self._answer
        return self.complete and not answer.until_eof and not answer.extra and answer.keep_alive


def _head(
    method: str, target: str, authority: bytes, headers: list[tuple[bytes, bytes]], length: int
) -> bytes:
    """A request's head; ValueError for a method, target or header that no line may carry."""
    if method not in _METHODS:
        raise ValueError(f"method {method!r}: the pool sends {' and '.join(_METHODS)} only")
    if not _TARGET.fullmatch(target):
        raise ValueError(f"request target {target!r}: not a path and query")
    lines = [b"%s %s HTTP/1.1\r\nhost: %s\r\ncontent-length: %d\r\n" % (
        method.encode(), target.encode(), authority, length
    )]  # fmt: skip
    for name, value in headers:
        if not _TOKEN.fullmatch(name) or _BREAKS.search(value):
            raise ValueError(f"header {name!r}: not a valid HTTP header line")
        lines.append(b"%s: %s\r\n" % (name, value))
    lines.append(b"\r\n")
    return b"".join(lines)


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
        """Send one request; the response once its head has arrived.

        Raises:
            ValueError: The method, target or a header cannot be sent (nothing was).
            ConnectFailed: No connection could be opened (nothing was sent).
            ConnectionBroken: The connection failed or closed during the exchange.

        """
        head = _head(method, target, self.authority, headers, len(body))
        async with self._slots:
            connection = self._idle_connection() or await self._connect()
            reusable = False
            try:
                connection.writer.write(head + body)
                answer = _Answer()
                while not answer.head:
                    await connection.receive(answer)
                response = Response(connection, answer)
                yield response
                reusable = response.reusable
            except (OSError, EOFError) as e:
                raise ConnectionBroken(f"{type(e).__name__}: {e}") from e
            finally:
                if reusable:
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
