"""The load generator's lean A2A client gives the evaluator's SDK client's verdicts.

Both clients ask the same server the same query; each answer, conforming or broken in one way
(a failed task, a status message, two artifacts, duplicates, unknown ids, a JSON-RPC error, an
HTTP error, a body that is not JSON, a connection cut mid-answer, no answer in time), must be
judged the same by :func:`ask_and_check`: accepted with the same ids, or refused for the same
reason. The server here is a stand-in for agents we do not write (it sends canned bytes, broken
framing included); against our real purple agent both clients must get the same rankings.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any

import pytest

from services.green_agent.evaluation.client import A2AVersion, connect
from services.green_agent.evaluation.egress import AllowedOrigins
from services.green_agent.evaluation.evaluator import QueryOutcome, ask_and_check
from services.green_agent.load.client import connect_lean
from services.nfcorpus.dataset import load_corpus, load_queries
from tests.support.small_index import SmallIndex

VALID = frozenset(f"MED-{i}" for i in range(1, 11))
TOP_K = 3
TIMEOUT_S = 2.0


def _card(base: str) -> dict[str, Any]:
    interfaces = [
        {"url": base + "/", "protocolBinding": "JSONRPC", "protocolVersion": "1.0"},
        {"url": base + "/", "protocolBinding": "JSONRPC", "protocolVersion": "0.3"},
    ]
    return {
        "name": "canned",
        "description": "answers what the test says",
        "version": "1",
        "url": base + "/",  # the 0.3 field a 0.3 client posts to
        "protocolVersion": "0.3.0",
        "supportedInterfaces": interfaces,
        "capabilities": {},
        "defaultInputModes": ["text/plain"],
        "defaultOutputModes": ["application/json"],
        "skills": [],
    }


def _task_v10(ids: Any, *, state: str = "COMPLETED", status_text: str | None = None,
              artifacts: list[Any] | None = None) -> dict[str, Any]:  # fmt: skip
    status: dict[str, Any] = {"state": f"TASK_STATE_{state}"}
    if status_text is not None:
        status["message"] = {
            "messageId": "m",
            "role": "ROLE_AGENT",
            "parts": [{"text": status_text}],
        }
    parts = artifacts if artifacts is not None else [[{"data": {"doc_ids": ids}}]]
    return {
        "task": {
            "id": "t",
            "contextId": "c",
            "status": status,
            "artifacts": [{"artifactId": f"a{i}", "parts": p} for i, p in enumerate(parts)],
        }
    }


def _task_v03(ids: Any, *, state: str = "completed", status_text: str | None = None,
              artifacts: list[Any] | None = None) -> dict[str, Any]:  # fmt: skip
    status: dict[str, Any] = {"state": state}
    if status_text is not None:
        status["message"] = {
            "kind": "message",
            "messageId": "m",
            "role": "agent",
            "parts": [{"kind": "text", "text": status_text}],
        }
    parts = artifacts if artifacts is not None else [[{"kind": "data", "data": {"doc_ids": ids}}]]
    return {
        "kind": "task",
        "id": "t",
        "contextId": "c",
        "status": status,
        "artifacts": [{"artifactId": f"a{i}", "parts": p} for i, p in enumerate(parts)],
    }


def _text(version: A2AVersion, text: str) -> dict[str, Any]:
    return {"text": text} if version == "1.0" else {"kind": "text", "text": text}


def _data(version: A2AVersion, value: Any) -> dict[str, Any]:
    return {"data": value} if version == "1.0" else {"kind": "data", "data": value}


def _results(version: A2AVersion) -> dict[str, Any]:
    """Name -> the JSON-RPC result (or a whole raw HTTP answer, as bytes) the agent sends."""
    task = _task_v10 if version == "1.0" else _task_v03
    message = (
        {"message": {"messageId": "m", "role": "ROLE_AGENT", "parts": [{"text": "hi"}]}}
        if version == "1.0"
        else {"kind": "message", "messageId": "m", "role": "agent", "parts": [_text(version, "hi")]}
    )
    return {
        "conforming": task(["MED-1", "MED-2", "MED-3"]),
        "failed": task([], state="FAILED" if version == "1.0" else "failed", status_text="boom"),
        "status message": task(["MED-1", "MED-2", "MED-3"], status_text="here you are"),
        "two artifacts": task(
            None,
            artifacts=[
                [_data(version, {"doc_ids": ["MED-1", "MED-2", "MED-3"]})],
                [_data(version, {"doc_ids": ["MED-4"]})],
            ],
        ),
        "text part": task(None, artifacts=[[_text(version, '{"doc_ids": ["MED-1"]}')]]),
        "two parts": task(
            None,
            artifacts=[
                [_data(version, {"doc_ids": ["MED-1", "MED-2", "MED-3"]}), _text(version, "x")]
            ],
        ),
        "duplicates": task(["MED-1", "MED-1", "MED-2"]),
        "unknown ids": task(["MED-1", "MED-2", "NOPE-9"]),
        "too few": task(["MED-1", "MED-2"]),
        "not strings": task(["MED-1", 2, "MED-3"]),
        "not doc_ids": task(None, artifacts=[[_data(version, {"ids": ["MED-1"]})]]),
        "a message": message,
        "jsonrpc error": {"__error__": {"code": -32603, "message": "internal"}},
        "http 503": b"HTTP/1.1 503 Service Unavailable\r\ncontent-length: 4\r\n\r\nbusy",
        "http 500": b"HTTP/1.1 500 Internal Server Error\r\ncontent-length: 4\r\n\r\noops",
        "not json": b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 5\r\n\r\nhello",
        "cut short": b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{"jsonrpc"',
        "too slow": "__sleep__",
    }


class CannedAgent:
    """A loopback HTTP/1.1 server: the card on GET, ``answer`` (set per case) on POST."""

    def __init__(self) -> None:
        self.answer: Any = None
        self.base = ""
        self.card_url: str | None = None  # the url the card names, when not the agent's own

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    name, _, value = line.partition(b":")
                    if name.strip().lower() == b"content-length":
                        length = int(value)
                body = await reader.readexactly(length) if length else b""
                if head.startswith(b"GET"):
                    card = _card(self.base)
                    if self.card_url is not None:
                        card["url"] = self.card_url
                    writer.write(_ok(json.dumps(card).encode()))
                elif self.answer == "__sleep__":
                    await asyncio.sleep(TIMEOUT_S * 2)
                    return
                elif isinstance(self.answer, bytes):
                    writer.write(self.answer)
                    await writer.drain()
                    return  # a raw answer ends the connection (and cuts a short one)
                else:
                    request_id = json.loads(body).get("id")
                    envelope: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
                    if isinstance(self.answer, dict) and "__error__" in self.answer:
                        envelope["error"] = self.answer["__error__"]
                    else:
                        envelope["result"] = self.answer
                    writer.write(_ok(json.dumps(envelope).encode()))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def _ok(body: bytes) -> bytes:
    head = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n"
    return head % len(body) + body


@asynccontextmanager
async def canned_agent() -> AsyncIterator[CannedAgent]:
    agent = CannedAgent()
    server = await asyncio.start_server(agent.handle, "127.0.0.1", 0)
    agent.base = f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}"
    try:
        yield agent
    finally:
        server.close()


async def _verdict(client: Any, version: A2AVersion) -> QueryOutcome:
    return await ask_and_check(client, "q1", "vitamin d", TOP_K, VALID, legacy=version == "0.3")


Opener = Callable[..., Any]


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_lean_and_sdk_clients_judge_every_answer_alike(version: A2AVersion) -> None:
    verdicts: dict[str, tuple[bool, str | None, list[str] | None]] = {}
    async with canned_agent() as agent:
        sdk = await connect(agent.base, version, TIMEOUT_S, 4)
        lean = await connect_lean(agent.base, version, TIMEOUT_S, 4)
        try:
            for case, answer in _results(version).items():
                agent.answer = answer
                ours = await _verdict(lean, version)
                theirs = await _verdict(sdk, version)
                assert (ours.ok, ours.reason, ours.doc_ids) == (
                    theirs.ok,
                    theirs.reason,
                    theirs.doc_ids,
                ), (
                    f"{case}: lean {ours.reason} ({ours.error}), SDK {theirs.reason} ({theirs.error})"
                )
                verdicts[case] = (ours.ok, ours.reason, ours.doc_ids)
        finally:
            await sdk.aclose()
            await lean.aclose()
    # The cases are what they say: one conforming answer, every other one refused.
    assert verdicts.pop("conforming") == (True, None, ["MED-1", "MED-2", "MED-3"])
    assert not any(ok for ok, _, _ in verdicts.values())
    assert verdicts["too slow"][1] == "timeout"
    assert verdicts["http 503"][1] == "overloaded"


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_lean_client_refuses_origins_outside_the_allowed_list(version: A2AVersion) -> None:
    async with canned_agent() as agent:
        agent.answer = _results(version)["conforming"]
        allowed = AllowedOrigins(["http://localhost:1"])
        with pytest.raises(Exception) as refused:
            client = await connect_lean(agent.base, version, TIMEOUT_S, 4, allowed=allowed)
            await client.ask("q", TOP_K)
        assert getattr(refused.value, "reason", None) == "refused"


@pytest.mark.parametrize("version", ["1.0", "0.3"])
async def test_both_clients_get_the_same_rankings_from_the_purple_agent(
    purple: Any, small_index: SmallIndex, version: A2AVersion
) -> None:
    queries = load_queries(small_index.settings.data_dir)
    valid = frozenset(d.doc_id for d in load_corpus(small_index.settings.data_dir))
    sdk = await connect(purple.url, version, 30, 4)
    lean = await connect_lean(purple.url, version, 30, 4)
    try:
        for query_id in small_index.query_ids[:8]:
            text = queries[query_id]
            legacy = version == "0.3"
            ours = await ask_and_check(lean, query_id, text, 5, valid, legacy=legacy)
            theirs = await ask_and_check(sdk, query_id, text, 5, valid, legacy=legacy)
            assert ours.ok, ours.error
            assert ours.doc_ids == theirs.doc_ids
    finally:
        await sdk.aclose()
        await lean.aclose()


@pytest.mark.parametrize("named", ["http://127.0.0.1:1/a b", "http://127.0.0.1:99999/", "ftp://x/"])
async def test_a_card_naming_an_unusable_url_is_a_failed_query_not_a_crash(named: str) -> None:
    async with canned_agent() as agent:
        agent.answer = _results("0.3")["conforming"]
        agent.card_url = named
        sdk = await connect(agent.base, "0.3", TIMEOUT_S, 4)
        lean = await connect_lean(agent.base, "0.3", TIMEOUT_S, 4)
        try:
            ours, theirs = await _verdict(lean, "0.3"), await _verdict(sdk, "0.3")
        finally:
            await sdk.aclose()
            await lean.aclose()
    assert not ours.ok
    assert (ours.ok, ours.reason) == (theirs.ok, theirs.reason)
