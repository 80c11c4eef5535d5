"""The seed's REST wire: ``POST /search_nfcorpus`` with ``{"query", "top_k"}``.

The public NFCorpus evaluator's "MCP server" speaks only this (and ``POST /health_check``);
ours serves it too. An answer is ``{"results": [...]}`` (extra keys such as ``qdrant_calls``
ignored), and a failed search is still an HTTP 200 carrying ``{"error": ..., "results": []}``,
which :func:`.backend.read_answer` turns into the tool error it is.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any

from services.common.http_pool import (
    ConnectFailed,
    ConnectionBroken,
    OriginPool,
    request_target,
)
from services.purple_agent.search.backend import (
    BadAnswer,
    NotSpoken,
    SearchAnswer,
    http_failure,
    not_here,
    read_answer,
)
from services.telemetry.tracing import inject_headers

log = logging.getLogger(__name__)

PATH = "/search_nfcorpus"
HEALTH_PATH = "/health_check"
#: The discovery probe: one small search, which shows the server speaks the whole wire.
PROBE_QUERY = "vitamin D"
_HEADERS = [(b"accept", b"application/json"), (b"content-type", b"application/json")]
#: Bytes of an error answer kept in the failure message.
_DETAIL_BYTES = 300


class RestBackend:
    """``POST url`` per search; ready while ``POST /health_check`` says so."""

    kind = "rest"

    def __init__(
        self, url: str, pool: OriginPool, headers: Mapping[str, str], *, include_text: bool
    ) -> None:
        self.url = url
        self._pool = pool
        self._target = request_target(url)
        self._health = self._target.removesuffix(PATH.lstrip("/")).rstrip("/") + HEALTH_PATH
        self._headers = [*_HEADERS, *((k.lower().encode(), v.encode()) for k, v in headers.items())]
        # Our server leaves the abstracts out on request (it rejects unknown fields, so the
        # probe found out whether it knows this one); the seed's ignores the field.
        self._extra: dict[str, Any] = {"include_text": False} if include_text else {}

    async def _post(self, target: str, payload: Mapping[str, Any]) -> tuple[int, bytes]:
        headers = [*self._headers, *((k.encode(), v.encode()) for k, v in inject_headers().items())]
        body = json.dumps(payload, separators=(",", ":")).encode()
        async with self._pool.post(target, headers, body) as answer:
            return answer.status, await answer.read()

    async def search(self, query: str, top_k: int) -> SearchAnswer:
        """One search."""
        status, body = await self._post(
            self._target, {"query": query, "top_k": top_k, **self._extra}
        )
        if status != 200:
            raise http_failure(status, body[:_DETAIL_BYTES].decode("utf-8", "replace"))
        return read_answer(_json(body))

    async def ready(self) -> tuple[bool, str]:
        """``POST /health_check``: ``"status": "error"`` is not ready; no such route, ready."""
        try:
            status, body = await self._post(self._health, {})
        except (ConnectFailed, ConnectionBroken) as e:
            return False, f"REST search server unreachable at {self.url}: {type(e).__name__}"
        if status == 200:
            try:
                health = _json(body)
            except BadAnswer:
                health = {}
            if isinstance(health, dict) and health.get("status") == "error":
                return False, f"REST search server at {self.url}: {health.get('message', 'error')}"
            return True, f"rest at {self.url}"
        if not_here(status):  # a server with the search route only: it answered the probe
            return True, f"rest at {self.url}"
        return False, f"REST search server health {self._health} answered {status}"


def _json(body: bytes) -> object:
    try:
        return json.loads(body)
    except ValueError as e:  # UnicodeDecodeError and JSONDecodeError alike
        raise BadAnswer(f"the answer is not JSON ({e})") from None


def _speaks(status: int, body: bytes) -> bool:
    """Whether a 200 answer to the probe is the search wire (results, or its error)."""
    try:
        answer = _json(body)
    except BadAnswer:
        return False
    return (
        status == 200
        and isinstance(answer, dict)
        and (isinstance(answer.get("results"), list) or isinstance(answer.get("error"), str))
    )


async def probe_rest(url: str, pool: OriginPool, headers: Mapping[str, str]) -> RestBackend:
    """The REST backend at ``url`` (a ``.../search_nfcorpus`` URL).

    Raises:
        NotSpoken: Nothing at ``url`` answers the search wire.
        ConnectFailed, ServerRefused, ServerFailed: the server could not be asked.

    """
    backend = RestBackend(url, pool, headers, include_text=True)
    probe = {"query": PROBE_QUERY, "top_k": 1}
    status, body = await backend._post(backend._target, {**probe, "include_text": False})
    if status in (400, 422):  # a strict server that does not know include_text
        backend = RestBackend(url, pool, headers, include_text=False)
        status, body = await backend._post(backend._target, probe)
    if _speaks(status, body):
        log.info("search backend: REST at %s", url)
        return backend
    if status == 200 or not_here(status):
        raise NotSpoken(
            f"POST {url} answered HTTP {status}"
            + (" (not the search wire)" if status == 200 else "")
        )
    raise http_failure(status, body[:_DETAIL_BYTES].decode("utf-8", "replace"))
