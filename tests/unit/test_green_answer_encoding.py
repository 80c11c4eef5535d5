"""The evaluator asks for answers uncompressed and refuses a compressed one: its decoded size is
not what the byte bound counts. A participant's answer, written byte for byte by a server on
loopback, read through :class:`CappedTransport` as every client of the evaluator reads it."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from services.green_agent.evaluation.bounds import AnswerEncoded, CappedTransport

BODY = b'{"ok": true}'


class _Participant:
    """A server answering every request with ``encodings`` as its Content-Encoding lines."""

    def __init__(self, encodings: list[str]) -> None:
        self.encodings = encodings
        self.heads: list[bytes] = []

    async def __call__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.heads.append(await reader.readuntil(b"\r\n\r\n"))
        lines = [b"HTTP/1.1 200 OK", b"content-type: application/json"]
        lines += [f"content-encoding: {e}".encode() for e in self.encodings]
        lines += [f"content-length: {len(BODY)}".encode(), b"connection: close"]
        writer.write(b"\r\n".join(lines) + b"\r\n\r\n" + BODY)
        await writer.drain()
        writer.close()


async def _answer(encodings: list[str]) -> tuple[httpx.Response, bytes]:
    """The answer read, and the head of the request the evaluator sent for it."""
    participant = _Participant(encodings)
    server = await asyncio.start_server(participant, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    transport = CappedTransport(1 << 20, httpx.Limits(max_connections=1))
    try:
        async with httpx.AsyncClient(transport=transport, timeout=10) as client:
            response = await client.get(f"http://127.0.0.1:{port}/")
    finally:
        server.close()
        await server.wait_closed()
    return response, participant.heads[0]


@pytest.mark.parametrize(
    "encodings", [[], ["identity"], ["IDENTITY "], [""], ["identity", "identity"], ["identity, "]]
)
async def test_an_answer_of_no_coding_is_read(encodings: list[str]) -> None:
    response, head = await _answer(encodings)
    assert response.status_code == 200 and response.content == BODY
    assert b"\r\naccept-encoding: identity\r\n" in head.lower()


@pytest.mark.parametrize(
    ("encodings", "named"),
    [
        (["gzip"], "gzip"),
        (["br"], "br"),
        (["identity", "gzip"], "identity, gzip"),
        (["identity, deflate"], "identity, deflate"),
        (["x-anything"], "x-anything"),
    ],
)
async def test_a_compressed_answer_is_refused_naming_its_coding(
    encodings: list[str], named: str
) -> None:
    with pytest.raises(AnswerEncoded, match=rf"the answer is compressed \({named}\) though"):
        await _answer(encodings)
