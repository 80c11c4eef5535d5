"""How much of a participant's answer the evaluator reads, and for how long: both bounded.

The participant is whoever an assessment names, so its answers are input like any other. httpx
bounds each read (``GREEN_TIMEOUT_S``) but not the whole: an endless body would fill the
evaluator's memory, and one byte every few seconds would hold its slot for ever. So every HTTP
client of the evaluator reads answers through :class:`CappedTransport`, which counts the bytes of
each answer as they arrive and stops it, as failed with ``too_large``, at ``GREEN_MAX_ANSWER_BYTES``
(at once when its ``Content-Length`` says more), and each query (card and reply together) has an
overall deadline, ``GREEN_QUERY_DEADLINE_S``, after which it fails with ``timeout``
(:mod:`services.green_agent.evaluation.client`). The answer is asked for uncompressed and a
compressed one is refused: its decoded size is not what the transport counts. Text of an answer
that reaches a report is cut to :data:`MAX_ECHO_CHARS` (:func:`clip`).

A client given a transport of its own reads no proxy settings from the environment: the
evaluator calls the allowed origins directly.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TypeVar, cast

import httpx

E = TypeVar("E", bound=BaseException)

SIZE_SETTING = "GREEN_MAX_ANSWER_BYTES"
DEADLINE_SETTING = "GREEN_QUERY_DEADLINE_S"
#: Characters of participant text (an error, a doc id) a report keeps of one failure.
MAX_ECHO_CHARS = 300


@dataclass(frozen=True, slots=True)
class AnswerBounds:
    """The most one answer may weigh, and the longest one query may take in all."""

    max_bytes: int
    deadline_s: float


class AnswerTooLarge(httpx.RequestError):
    """An answer went over the byte bound; it was stopped there."""


class AnswerEncoded(httpx.RequestError):
    """An answer came compressed, though the evaluator asked for it uncompressed."""


def clip(text: str, limit: int = MAX_ECHO_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how much was cut."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}… ({len(text) - limit} more characters)"


class _CappedStream(httpx.AsyncByteStream):
    """An answer's bytes as they arrive, raising :class:`AnswerTooLarge` past the bound."""

    def __init__(self, inner: httpx.AsyncByteStream, request: httpx.Request, cap: int) -> None:
        self._inner = inner
        self._request = request
        self._cap = cap

    async def __aiter__(self) -> AsyncIterator[bytes]:
        seen = 0
        async for chunk in self._inner:
            seen += len(chunk)
            if seen > self._cap:
                raise AnswerTooLarge(_too_large(self._cap), request=self._request)
            yield chunk

    async def aclose(self) -> None:
        await self._inner.aclose()


def _too_large(cap: int) -> str:
    return f"the answer is larger than {cap} bytes ({SIZE_SETTING}): stopped there"


class CappedTransport(httpx.AsyncBaseTransport):
    """httpx's transport, every answer read through a byte counter (see the module docstring)."""

    def __init__(self, cap: int, limits: httpx.Limits) -> None:
        """Stop each answer at ``cap`` bytes; ``limits`` bound the pool of connections."""
        self._cap = cap
        self._inner = httpx.AsyncHTTPTransport(limits=limits)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request``; its answer's body is counted as it is read."""
        request.headers["accept-encoding"] = "identity"
        response = await self._inner.handle_async_request(request)
        length = response.headers.get("content-length", "")
        encoding = response.headers.get("content-encoding", "identity").strip().lower()
        # Each coding named, as httpx reads them to decode: none but identity (or an empty
        # element, which names none) leaves the bytes counted as the bytes read.
        codings = response.headers.get_list("content-encoding", split_commas=True)
        problem: httpx.RequestError | None = None
        if length.isdigit() and int(length) > self._cap:
            problem = AnswerTooLarge(_too_large(self._cap), request=request)
        elif any(c.strip().lower() not in ("", "identity") for c in codings):
            problem = AnswerEncoded(
                f"the answer is compressed ({encoding}) though identity was asked: its size "
                "cannot be bounded",
                request=request,
            )
        if problem is not None:
            await response.aclose()
            raise problem
        stream = cast(httpx.AsyncByteStream, response.stream)  # an async transport's
        return httpx.Response(
            response.status_code,
            headers=response.headers,
            stream=_CappedStream(stream, request, self._cap),
            extensions=response.extensions,
            request=request,
        )

    async def aclose(self) -> None:
        """Close the pooled connections."""
        await self._inner.aclose()


def found_in(error: BaseException, kind: type[E]) -> E | None:
    """The ``kind`` behind ``error`` (SDKs wrap transport errors), if any."""
    seen: BaseException | None = error
    while seen is not None:
        if isinstance(seen, kind):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None
