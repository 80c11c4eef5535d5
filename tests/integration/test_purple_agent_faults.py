"""The purple agent when the MCP server misbehaves: trace context still travels, a silent server
fails the task at the deadline, an outage fails fast and the agent recovers when it returns.

The outage test stops the shared MCP server (and starts it again), so it runs last here.
"""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

import httpx
import pytest

from services.purple_agent.settings import PurpleSettings
from tests.support.purple import ThreadedServer, v03_body


class _Recorder:
    """A TCP server that records request headers, then answers 503 or nothing at all."""

    def __init__(self, answer: bool) -> None:
        self.answer = answer
        self.headers: list[dict[str, str]] = []
        self.server: asyncio.Server | None = None
        self.url = ""

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        lines = head.decode("latin-1").split("\r\n")[1:]
        self.headers.append({k.lower(): v.strip() for k, _, v in (x.partition(":") for x in lines)})
        if self.answer:
            writer.write(b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 0\r\n\r\n")
            await writer.drain()
        else:
            await reader.read()  # hold the connection open until the client gives up
        writer.close()

    async def __aenter__(self) -> _Recorder:
        self.server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        port = self.server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/mcp"
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self.server is not None
        self.server.close()


async def test_trace_context_is_propagated_to_the_mcp_server(http: httpx.AsyncClient) -> None:
    trace_id = uuid.uuid4().hex
    async with _Recorder(answer=True) as recorder:
        settings = PurpleSettings(mcp_url=recorder.url, mcp_retries=0, deadline_s=5)
        with ThreadedServer(settings) as purple:
            headers = {"traceparent": f"00-{trace_id}-{'1' * 16}-01"}
            reply = await http.post(
                purple.url + "/", json=v03_body('{"query": "x"}'), headers=headers
            )
    assert reply.json()["result"]["status"]["state"] == "failed"
    assert recorder.headers, "the MCP server was never called"
    assert all(h["traceparent"].split("-")[1] == trace_id for h in recorder.headers)


@pytest.mark.parametrize(
    ("deadline_s", "timeout_s", "message"),
    [
        # The call times out first: no retry, since the server may still be searching.
        (3.0, 1.0, "retrieval failed: the search service did not answer in time"),
        # The deadline comes first.
        (1.0, 5.0, "deadline of 1 s exceeded: the search service did not answer"),
    ],
)
async def test_a_silent_mcp_server_fails_the_task_once_without_a_retry(
    http: httpx.AsyncClient, deadline_s: float, timeout_s: float, message: str
) -> None:
    async with _Recorder(answer=False) as hole:
        settings = PurpleSettings(mcp_url=hole.url, deadline_s=deadline_s, mcp_timeout_s=timeout_s)
        with ThreadedServer(settings) as purple:
            reply = await http.post(purple.url + "/", json=v03_body('{"query": "x"}'))
        calls = len(hole.headers)
    status = reply.json()["result"]["status"]
    assert status["state"] == "failed"
    # The message says which limit ended it (the earlier one); how long that took is the
    # machine's business.
    assert status["message"]["parts"][0]["text"] == message
    assert calls == 1


async def test_a_refusing_mcp_server_is_retried_with_backoff(http: httpx.AsyncClient) -> None:
    async with _Recorder(answer=True) as refusing:  # 503 to everything
        settings = PurpleSettings(mcp_url=refusing.url, mcp_retries=3, mcp_backoff_s=0.05)
        with ThreadedServer(settings) as purple:
            reply = await http.post(purple.url + "/", json=v03_body('{"query": "x"}'))
            metrics = (await http.get(purple.url + "/metrics")).text
        calls = len(refusing.headers)
    text = reply.json()["result"]["status"]["message"]["parts"][0]["text"]
    assert text == "retrieval failed: the search service refused the call (HTTP 503)"
    assert calls == 4  # the first attempt and three retries
    assert 'purple_request_failures_total{reason="mcp_overloaded"}' in metrics


async def test_mcp_outage_fails_fast_and_recovers(
    purple: ThreadedServer, http: httpx.AsyncClient, mcp_server: Any
) -> None:
    body = v03_body('{"query": "omega-3 and heart disease", "top_k": 5}')
    mcp_server.stop()
    try:
        task = (await http.post(purple.url + "/", json=body)).json()["result"]
        assert task["status"]["state"] == "failed"
        text = task["status"]["message"]["parts"][0]["text"]
        # Failed on the refused connection, not at the deadline.
        assert text == "retrieval failed: the search service is unreachable", text
        assert (await http.get(purple.url + "/readyz")).status_code == 503
        metrics = (await http.get(purple.url + "/metrics")).text
        assert 'purple_request_failures_total{reason="mcp_unavailable"}' in metrics
        assert "purple_mcp_retries_total" in metrics
    finally:
        mcp_server.start()
    deadline = time.monotonic() + 30
    while True:
        task = (await http.post(purple.url + "/", json=body)).json()["result"]
        if task["status"]["state"] == "completed" or time.monotonic() > deadline:
            break
        await asyncio.sleep(0.1)
    assert task["status"]["state"] == "completed"
    assert len(task["artifacts"][0]["parts"][0]["data"]["doc_ids"]) == 5
