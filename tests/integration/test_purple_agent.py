"""The purple agent served by uvicorn on loopback, in front of the real MCP server fixture.

Covers the answer contract, both JSON-RPC dialects, bad input over HTTP, health and metrics,
trace propagation, the deadline, and an MCP outage (kept last: it stops the shared server).
"""

from __future__ import annotations

import asyncio
import json
import re
import socket
import threading
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest
import uvicorn

from services.green_agent.client import SdkAgentClient, reply_from_v03_result
from services.green_agent.contract import check_reply, legacy_concatenation
from services.green_agent.dataset import TestSet, load_test_set
from services.green_agent.evaluator import evaluate
from services.purple_agent.app import create_app
from services.purple_agent.settings import PurpleSettings
from services.retrieval.settings import RetrievalSettings

START_TIMEOUT_S = 15.0


class ThreadedServer:
    """An ASGI app served by uvicorn in a thread, on a loopback socket bound up front."""

    def __init__(self, settings: PurpleSettings) -> None:
        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        port = self.socket.getsockname()[1]
        self.url = f"http://127.0.0.1:{port}"
        settings = settings.model_copy(update={"port": port})
        config = uvicorn.Config(create_app(settings), log_level="warning", lifespan="on")
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, args=([self.socket],), daemon=True)

    def __enter__(self) -> ThreadedServer:
        self.thread.start()
        deadline = time.monotonic() + START_TIMEOUT_S
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("purple agent did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *_: object) -> None:
        self.server.should_exit = True
        self.thread.join(START_TIMEOUT_S)
        self.socket.close()


@pytest.fixture(scope="module")
def purple(mcp_server: Any) -> Iterator[ThreadedServer]:
    with ThreadedServer(PurpleSettings(mcp_url=mcp_server.mcp_url, deadline_s=10)) as server:
        yield server


@pytest.fixture(scope="module")
def test_set() -> TestSet:
    return load_test_set(RetrievalSettings().data_dir)


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30) as client:
        yield client


def _v03_body(text: str) -> dict[str, Any]:
    message = {
        "kind": "message",
        "messageId": uuid.uuid4().hex,
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    }
    return {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}


def _v10_body(parts: list[dict[str, Any]]) -> dict[str, Any]:
    message = {"role": "ROLE_USER", "messageId": uuid.uuid4().hex, "parts": parts}
    return {"jsonrpc": "2.0", "id": 2, "method": "SendMessage", "params": {"message": message}}


async def test_every_reply_meets_the_contract(purple: ThreadedServer, test_set: TestSet) -> None:
    client = await SdkAgentClient.connect(purple.url, timeout_s=30, max_connections=8)
    try:
        query_ids = test_set.query_ids[:30]
        outcomes, _ = await evaluate(client, test_set, query_ids, top_k=10, concurrency=4)
        assert [o.error for o in outcomes if not o.ok] == []
        assert len(outcomes) == 30
        for top_k in (1, 100):
            reply = await client.ask(test_set.queries[query_ids[0]], top_k)
            assert len(check_reply(reply, top_k, test_set.doc_ids)) == top_k
    finally:
        await client.aclose()


async def test_0_3_and_1_0_dialects_answer_in_their_own_shapes(
    purple: ThreadedServer, http: httpx.AsyncClient
) -> None:
    text = json.dumps({"query": "statins and breast cancer", "top_k": 5})
    legacy = (await http.post(purple.url + "/", json=_v03_body(text))).json()
    task = legacy["result"]
    assert task["kind"] == "task"
    assert task["status"]["state"] == "completed"
    assert "message" not in task["status"]
    (artifact,) = task["artifacts"]
    assert artifact["name"] == "retrieval_results"
    (part,) = artifact["parts"]
    assert part["kind"] == "data"
    ids = part["data"]["doc_ids"]
    assert len(ids) == 5 and len(set(ids)) == 5 and all(re.fullmatch(r"MED-\d+", d) for d in ids)
    # What a 0.3 green agent does with the reply: concatenate, then json.loads.
    assert json.loads(legacy_concatenation(reply_from_v03_result(task))) == {"doc_ids": ids}

    headers = {"A2A-Version": "1.0"}
    body = _v10_body([{"text": text}])
    current = (await http.post(purple.url + "/", json=body, headers=headers)).json()
    task = current["result"]["task"]
    assert task["status"]["state"] == "TASK_STATE_COMPLETED"
    (artifact,) = task["artifacts"]
    assert artifact["name"] == "retrieval_results"
    assert artifact["parts"] == [{"data": {"doc_ids": ids}}]


async def test_a_1_0_method_without_the_version_header_is_refused(
    purple: ThreadedServer, http: httpx.AsyncClient
) -> None:
    body = _v10_body([{"text": '{"query": "x"}'}])
    reply = (await http.post(purple.url + "/", json=body)).json()
    assert "error" in reply


async def test_a_data_part_request_is_answered(
    purple: ThreadedServer, http: httpx.AsyncClient
) -> None:
    body = _v10_body([{"data": {"query": "vitamin D deficiency", "top_k": 3}}])
    reply = (await http.post(purple.url + "/", json=body, headers={"A2A-Version": "1.0"})).json()
    (artifact,) = reply["result"]["task"]["artifacts"]
    assert len(artifact["parts"][0]["data"]["doc_ids"]) == 3


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("hello", "the message text is not JSON (Expecting value at position 0)"),
        ('{"query": ""}', "query must not be empty"),
        (json.dumps({"query": "q" * 2001}), "query must be at most 2000 characters, got 2001"),
        ('{"query": "x", "top_k": 0}', "top_k must be between 1 and 100, got 0"),
        ('{"query": "x", "top_k": 101}', "top_k must be between 1 and 100, got 101"),
        ('{"query": "x", "top_k": "3"}', 'top_k must be an integer, got the string "3"'),
        ('{"query": 3}', "query must be a string, got 3"),
        ('{"top_k": 3}', "query is required"),
        ("[]", "the payload must be a JSON object, got a list"),
    ],
)
async def test_bad_input_over_0_3_fails_with_the_exact_message(
    purple: ThreadedServer, http: httpx.AsyncClient, text: str, detail: str
) -> None:
    task = (await http.post(purple.url + "/", json=_v03_body(text))).json()["result"]
    assert task["status"]["state"] == "failed"
    expected = (
        f'invalid request: {detail}; expected {{"query": "<text>", "top_k": <1..100, default 5>}}'
    )
    assert task["status"]["message"]["parts"] == [{"kind": "text", "text": expected}]
    assert not task.get("artifacts")


async def test_cancel_is_refused(purple: ThreadedServer, http: httpx.AsyncClient) -> None:
    task = (await http.post(purple.url + "/", json=_v03_body('{"query": "x"}'))).json()["result"]
    body = {"jsonrpc": "2.0", "id": 3, "method": "tasks/cancel", "params": {"id": task["id"]}}
    reply = (await http.post(purple.url + "/", json=body)).json()
    assert "error" in reply and "result" not in reply


async def test_health_readiness_and_metrics(
    purple: ThreadedServer, http: httpx.AsyncClient
) -> None:
    assert (await http.get(purple.url + "/healthz")).json() == {"status": "ok"}
    ready = await http.get(purple.url + "/readyz")
    assert (ready.status_code, ready.json()["status"]) == (200, "ready")
    await http.post(purple.url + "/", json=_v03_body('{"query": "fish oil"}'))
    await http.post(purple.url + "/", json=_v03_body('{"query": ""}'))
    text = (await http.get(purple.url + "/metrics")).text
    assert 'purple_request_duration_seconds_count{outcome="completed"}' in text
    assert 'purple_request_duration_seconds_count{outcome="failed"}' in text
    assert 'purple_mcp_call_duration_seconds_count{outcome="ok"}' in text
    assert 'purple_request_failures_total{reason="invalid_request"}' in text
    assert "purple_requests_in_flight" in text


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
                purple.url + "/", json=_v03_body('{"query": "x"}'), headers=headers
            )
    assert reply.json()["result"]["status"]["state"] == "failed"
    assert recorder.headers, "the MCP server was never called"
    assert all(h["traceparent"].split("-")[1] == trace_id for h in recorder.headers)


async def test_a_silent_mcp_server_fails_the_task_within_the_deadline(
    http: httpx.AsyncClient,
) -> None:
    async with _Recorder(answer=False) as hole:
        settings = PurpleSettings(mcp_url=hole.url, deadline_s=1.5, mcp_timeout_s=1.0)
        with ThreadedServer(settings) as purple:
            started = time.monotonic()
            reply = await http.post(purple.url + "/", json=_v03_body('{"query": "x"}'))
            elapsed = time.monotonic() - started
    status = reply.json()["result"]["status"]
    assert status["state"] == "failed"
    text = status["message"]["parts"][0]["text"]
    assert text.startswith("deadline of 1.5 s exceeded:"), text
    assert elapsed < 1.5 + 1.0


async def test_mcp_outage_fails_fast_and_recovers(
    purple: ThreadedServer, http: httpx.AsyncClient, mcp_server: Any
) -> None:
    body = _v03_body('{"query": "omega-3 and heart disease", "top_k": 5}')
    mcp_server.stop()
    try:
        started = time.monotonic()
        task = (await http.post(purple.url + "/", json=body)).json()["result"]
        assert time.monotonic() - started < 5.0  # the deadline is 10 s: fail clearly, early
        assert task["status"]["state"] == "failed"
        text = task["status"]["message"]["parts"][0]["text"]
        assert text.startswith(f"retrieval failed: MCP server at {mcp_server.mcp_url}"), text
        assert "unreachable" in text
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
