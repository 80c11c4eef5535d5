"""The purple agent's keep-alive connections to the MCP server, against a loopback HTTP server:
reused after a complete exchange, dropped when the server closes them or the caller gives up.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable

import pytest

from services.common.http_pool import ConnectFailed, ConnectionBroken, OriginPool
from tests.support.ports import closed_url


class _Server:
    """Answers each POST with its body; ``/slow`` never answers, ``/close`` closes after its
    answer, ``/cut`` in the middle of it. The body also comes back in other framings: in chunks
    (``/chunked``), after an interim 100 (``/interim``), ended by closing the connection
    (``/eof``), marked ``connection: close`` on an open connection (``/close-header``), or not
    as HTTP at all (``/garbage``), or switched to another protocol (``/upgrade``)."""

    def __init__(self) -> None:
        self.connections = 0
        self.gone = asyncio.Event()
        self.url = ""

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            while head := await reader.readuntil(b"\r\n\r\n"):
                target = head.split(b" ")[1]
                length = next(
                    int(line.split(b":")[1])
                    for line in head.split(b"\r\n")
                    if line.lower().startswith(b"content-length")
                )
                body = await reader.readexactly(length)
                if target == b"/cut":
                    writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nabc")
                    return
                if target == b"/slow":
                    await reader.read()  # until the client closes
                    self.gone.set()
                    return
                if framed := _FRAMINGS.get(target):
                    writer.write(framed(body))
                    await writer.drain()
                    if target == b"/eof":
                        return
                    continue
                writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body))
                await writer.drain()
                if target == b"/close":
                    return
        except asyncio.IncompleteReadError:
            return
        finally:
            writer.close()


def _chunked(body: bytes) -> bytes:
    half = len(body) // 2
    chunks = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in (body[:half], body[half:]) if c)
    return b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n" + chunks + b"0\r\n\r\n"


_FRAMINGS: dict[bytes, Callable[[bytes], bytes]] = {
    b"/chunked": _chunked,
    b"/interim": lambda body: (
        b"HTTP/1.1 100 Continue\r\nx-interim: yes\r\n\r\n"
        b"HTTP/1.1 201 Created\r\ncontent-length: %d\r\nx-final: yes\r\n\r\n%s" % (len(body), body)
    ),
    b"/eof": lambda body: b"HTTP/1.1 200 OK\r\n\r\n" + body,
    b"/close-header": lambda body: (
        b"HTTP/1.1 200 OK\r\nconnection: close\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
    ),
    b"/garbage": lambda body: b"SMTP ready\r\n\r\n",
    b"/upgrade": lambda body: (
        b"HTTP/1.1 101 Switching Protocols\r\nconnection: upgrade\r\nupgrade: websocket\r\n\r\n"
    ),
}


@pytest.fixture
async def server() -> AsyncIterator[_Server]:
    state = _Server()
    listening = await asyncio.start_server(state.handle, "127.0.0.1", 0)
    state.url = f"http://127.0.0.1:{listening.sockets[0].getsockname()[1]}"
    async with listening:
        yield state


@contextlib.asynccontextmanager
async def _pool(url: str, connections: int) -> AsyncIterator[OriginPool]:
    pool = OriginPool(url, max_connections=connections)
    try:
        yield pool
    finally:
        await pool.aclose()


async def _echo(pool: OriginPool, target: str, body: bytes) -> bytes:
    async with pool.post(target, [], body) as response:
        assert response.status == 200
        return await response.read()


async def test_a_connection_is_kept_for_the_next_request(server: _Server) -> None:
    async with _pool(server.url, 4) as pool:
        assert [await _echo(pool, "/", b"%d" % i) for i in range(5)] == [
            b"0",
            b"1",
            b"2",
            b"3",
            b"4",
        ]
        assert server.connections == 1
        answers = await asyncio.gather(*(_echo(pool, "/", b"x") for _ in range(8)))
        assert answers == [b"x"] * 8 and server.connections <= 4


async def test_a_connection_the_server_closed_is_not_reused(server: _Server) -> None:
    async with _pool(server.url, 4) as pool:
        assert await _echo(pool, "/close", b"a") == b"a"
        await asyncio.sleep(0.05)  # the close arrives while the connection is idle
        assert await _echo(pool, "/", b"b") == b"b"
        assert server.connections == 2


async def test_a_caller_that_gives_up_closes_its_connection(server: _Server) -> None:
    async with _pool(server.url, 4) as pool:
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(0.2):
                await _echo(pool, "/slow", b"?")
        async with asyncio.timeout(5):
            await server.gone.wait()  # the server saw the connection close
        assert await _echo(pool, "/", b"again") == b"again"


async def test_failures_say_whether_anything_was_sent(server: _Server) -> None:
    with closed_url("") as nobody:
        pool = OriginPool(nobody, max_connections=1)
        with pytest.raises(ConnectFailed):
            await _echo(pool, "/", b"x")
    async with _pool(server.url, 1) as pool:
        with pytest.raises(ConnectionBroken):
            await _echo(pool, "/cut", b"x")
        assert await _echo(pool, "/", b"next") == b"next"


async def test_answers_in_chunks_after_an_interim_head_or_ended_by_the_close_are_read_whole(
    server: _Server,
) -> None:
    body = b"abcdefghij" * 300
    async with _pool(server.url, 1) as pool:
        assert await _echo(pool, "/chunked", body) == body
        assert await _echo(pool, "/chunked", b"") == b""
        async with pool.post("/interim", [], body) as response:
            assert response.status == 201
            assert response.headers.get("x-final") == "yes" and "x-interim" not in response.headers
            assert await response.read() == body
        assert server.connections == 1  # each of those kept the connection
        async with pool.post("/eof", [], body) as response:
            assert await response.read() == body
        async with pool.post("/close-header", [], b"x") as response:
            assert await response.read() == b"x"
        assert await _echo(pool, "/", b"after") == b"after"
        # Neither the body that ended with its connection nor the one marked close kept theirs.
        assert server.connections == 3


@pytest.mark.parametrize("target", ["/garbage", "/upgrade"])
async def test_an_answer_that_is_not_http_breaks_the_connection(
    server: _Server, target: str
) -> None:
    async with _pool(server.url, 1) as pool:
        with pytest.raises(ConnectionBroken):
            await _echo(pool, target, b"x")
        assert await _echo(pool, "/", b"next") == b"next"


@pytest.mark.parametrize(
    ("method", "target", "headers"),
    [
        ("POST", "/", [(b"x-token", b"a\r\nx-injected: 1")]),
        ("POST", "/", [(b"bad name", b"v")]),
        ("POST", "/a b", []),
        ("DELETE", "/", []),
    ],
)
async def test_a_request_no_http_line_can_carry_is_refused_before_connecting(
    server: _Server, method: str, target: str, headers: list[tuple[bytes, bytes]]
) -> None:
    async with _pool(server.url, 1) as pool:
        with pytest.raises(ValueError):
            async with pool.request(method, target, headers, b"x"):
                pass
        assert server.connections == 0
