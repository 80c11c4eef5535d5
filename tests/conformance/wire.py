"""What an a2a-sdk 0.3 client sends and reads: JSON-RPC bodies, the blocking and streaming calls.

Written against the wire, not a client library, so that the suite checks the bytes any 0.3 green
agent depends on: it POSTs to the card's ``url``, and reads the final task (or the stream's
events) for one artifact with one data part ``{"doc_ids": [...]}``.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass, field
from typing import Any

import httpx

TIMEOUT_S = 60.0


def message_body(text: str, method: str = "message/send") -> dict[str, Any]:
    """A 0.3 JSON-RPC request carrying one text part."""
    message = {
        "kind": "message",
        "messageId": uuid.uuid4().hex,
        "role": "user",
        "parts": [{"kind": "text", "text": text}],
    }
    return {
        "jsonrpc": "2.0",
        "id": uuid.uuid4().hex,
        "method": method,
        "params": {"message": message},
    }


def query_text(query: str, top_k: int) -> str:
    """The evaluator's message text."""
    return json.dumps({"query": query, "top_k": top_k})


@dataclass
class Answer:
    """The final state of a task as a 0.3 client assembles it."""

    state: str
    status_text: str = ""
    artifacts: list[dict[str, Any]] = field(default_factory=list)

    def doc_ids(self) -> list[str]:
        """The ids of the one data part of the one artifact (asserting that shape)."""
        assert self.state == "completed", f"task {self.state}: {self.status_text}"
        assert self.status_text == "", "a completed task carries no status message"
        assert len(self.artifacts) == 1, f"expected 1 artifact, got {len(self.artifacts)}"
        parts = self.artifacts[0]["parts"]
        assert [p.get("kind") for p in parts] == ["data"], f"expected 1 data part: {parts}"
        data = parts[0]["data"]
        assert isinstance(data, dict) and set(data) == {"doc_ids"}, data
        ids = data["doc_ids"]
        assert isinstance(ids, list) and all(isinstance(d, str) for d in ids), ids
        return ids


def _text(message: dict[str, Any] | None) -> str:
    parts = (message or {}).get("parts", [])
    return "\n".join(str(p.get("text", "")) for p in parts if p.get("kind") == "text")


def post(url: str, body: object, headers: dict[str, str] | None = None) -> httpx.Response:
    """One JSON-RPC POST."""
    return httpx.post(url, json=body, headers=headers, timeout=TIMEOUT_S)


def send(url: str, text: str) -> Answer:
    """``message/send``: the task the agent answers with."""
    reply = post(url, message_body(text))
    assert reply.status_code == 200, reply.text[:500]
    task = reply.json().get("result")
    assert isinstance(task, dict) and task.get("kind") == "task", reply.text[:500]
    status = task["status"]
    return Answer(status["state"], _text(status.get("message")), task.get("artifacts") or [])


def stream(url: str, text: str) -> tuple[Answer, list[dict[str, Any]]]:
    """``message/stream``: the task assembled from its events, and the events themselves."""
    events: list[dict[str, Any]] = []
    body = message_body(text, "message/stream")
    headers = {"accept": "text/event-stream"}
    with httpx.stream("POST", url, json=body, headers=headers, timeout=TIMEOUT_S) as reply:
        assert reply.status_code == 200
        assert reply.headers["content-type"].startswith("text/event-stream")
        for line in reply.iter_lines():
            if line.startswith("data:"):
                events.append(json.loads(line.removeprefix("data:"))["result"])
    answer = Answer("unknown")
    for event in events:
        kind = event.get("kind")
        if kind == "task":
            answer.artifacts = list(event.get("artifacts") or [])
            answer.state = event["status"]["state"]
        elif kind == "artifact-update":  # merged by id, as the 0.3 SDK's task manager does
            artifact = event["artifact"]
            same = [a for a in answer.artifacts if a.get("artifactId") == artifact["artifactId"]]
            if same and event.get("append"):
                same[0]["parts"] = [*same[0]["parts"], *artifact["parts"]]
            else:
                answer.artifacts = [*(a for a in answer.artifacts if a not in same), artifact]
        elif kind == "status-update":
            answer.state = event["status"]["state"]
            answer.status_text = _text(event["status"].get("message"))
    return answer, events
