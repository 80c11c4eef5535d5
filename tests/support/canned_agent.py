"""A stand-in for agents we do not write: canned answers, conforming and broken, on loopback.

The card on GET; on POST the answer a test sets, as a JSON-RPC result or error or as whole raw
bytes (an HTTP error, a body that is not JSON, a connection cut mid-answer), or no answer in time.
:func:`answers` are the cases every client of ours must judge as the evaluator does
(``tests/integration/test_load_client.py``, ``tests/integration/test_locustfile.py``).
"""

from __future__ import annotations

import asyncio
import json
from collections import deque
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from services.green_agent.evaluation.client import A2AVersion

#: Ids the cases treat as the corpus's; a client must take these as the valid ones.
VALID = frozenset(f"MED-{i}" for i in range(1, 11))
TOP_K = 3
#: The clients' timeout: "too slow" answers after twice as long.
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


def answers(version: A2AVersion) -> dict[str, Any]:
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
        # Whole raw answers after which the server closes the connection, saying so: a client
        # that reused it would fail the next case over that, not over the case's own answer.
        "http 503": _closing(b"503 Service Unavailable", b"busy"),
        "http 500": _closing(b"500 Internal Server Error", b"oops"),
        "not json": _closing(b"200 OK", b"hello"),
        "cut short": b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 500\r\n\r\n{"jsonrpc"',
        "too slow": "__sleep__",
        **(_broken_v03() if version == "0.3" else {}),
    }


def _broken_v03() -> dict[str, Any]:
    """0.3 results of the wrong shape, which once crashed the evaluator's 0.3 reading."""
    ids = {"kind": "data", "data": {"doc_ids": ["MED-1", "MED-2", "MED-3"]}}
    artifact = {"artifactId": "a", "parts": [ids]}
    return {
        "result not an object": ["MED-1", "MED-2", "MED-3"],
        "status not an object": {"kind": "task", "status": "completed", "artifacts": [artifact]},
        "artifact not an object": {
            "kind": "task",
            "status": {"state": "completed"},
            "artifacts": [artifact, 7],
        },
        "parts not a list": {
            "kind": "task",
            "status": {"state": "completed"},
            "artifacts": [{"artifactId": "a", "parts": "MED-1"}],
        },
    }


class CannedAgent:
    """A loopback HTTP/1.1 server: the card on GET, ``answer`` (set per case) on POST.

    With ``queue`` set, each POST takes the next answer from it instead (``answer`` once it is
    empty): cases one after another for a client that cannot be paused between them (Locust).
    """

    def __init__(self) -> None:
        self.answer: Any = None
        self.queue: deque[Any] = deque()
        self.base = ""
        self.card_url: str | None = None  # the url the card names, when not the agent's own
        self.slow_s = 2 * TIMEOUT_S  # how long "too slow" keeps a request waiting

    def _next(self) -> Any:
        return self.queue.popleft() if self.queue else self.answer

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
                    await writer.drain()
                    continue
                answer = self._next()
                if answer == "__sleep__":
                    await asyncio.sleep(self.slow_s)
                    return
                if isinstance(answer, bytes):
                    writer.write(answer)
                    await writer.drain()
                    return  # a raw answer ends the connection (and cuts a short one)
                request_id = json.loads(body).get("id")
                envelope: dict[str, Any] = {"jsonrpc": "2.0", "id": request_id}
                if isinstance(answer, dict) and "__error__" in answer:
                    envelope["error"] = answer["__error__"]
                else:
                    envelope["result"] = answer
                writer.write(_ok(json.dumps(envelope).encode()))
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            writer.close()


def _closing(status: bytes, body: bytes) -> bytes:
    head = b"HTTP/1.1 %s\r\ncontent-type: application/json\r\nconnection: close\r\n"
    return head % status + b"content-length: %d\r\n\r\n" % len(body) + body


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


def write_data_set(folder: Path) -> Path:
    """A BEIR folder whose corpus is :data:`VALID` and whose one test query is ``q1``."""
    folder.mkdir(parents=True, exist_ok=True)
    corpus = [{"_id": doc_id, "title": "", "text": doc_id} for doc_id in sorted(VALID)]
    (folder / "corpus.jsonl").write_text("".join(json.dumps(d) + "\n" for d in corpus))
    (folder / "queries.jsonl").write_text(json.dumps({"_id": "q1", "text": "vitamin d"}) + "\n")
    (folder / "qrels").mkdir(exist_ok=True)
    for split in ("train", "dev", "test"):
        judged = "q1\tMED-1\t1\n" if split == "test" else ""
        (folder / "qrels" / f"{split}.tsv").write_text("query-id\tcorpus-id\tscore\n" + judged)
    return folder
