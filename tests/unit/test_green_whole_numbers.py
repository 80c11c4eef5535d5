"""The green agent's answers carry a data part's whole numbers as integers (json_numbers)."""

from __future__ import annotations

import json

import httpx
from starlette.types import Receive, Scope, Send

from services.green_agent.assessment.json_numbers import WholeNumbers, in_data_parts

RESULT = {"total_queries": 323.0, "ndcg": 0.52, "ok": True, "spread": {"count": 3.0}, "f": [1.0]}
ANSWER = {
    "result": {
        "artifacts": [{"parts": [{"text": "323.0"}, {"data": RESULT}]}],
        "status": {"timestamp": 2.0},  # not a part's data: left as it is
    }
}


def test_whole_numbers_of_part_data_become_ints_and_the_rest_stays() -> None:
    out = in_data_parts(ANSWER)["result"]
    data = out["artifacts"][0]["parts"][1]["data"]
    assert data == {
        "total_queries": 323,
        "ndcg": 0.52,
        "ok": True,
        "spread": {"count": 3},
        "f": [1],
    }
    assert type(data["total_queries"]) is int and data["ok"] is True
    assert out["artifacts"][0]["parts"][0] == {"text": "323.0"}
    assert type(out["status"]["timestamp"]) is float


def _app(content_type: str, chunks: list[bytes]) -> WholeNumbers:
    async def app(scope: Scope, receive: Receive, send: Send) -> None:
        headers = [(b"content-type", content_type.encode())]
        if content_type == "application/json":
            headers.append((b"content-length", str(sum(map(len, chunks))).encode()))
        await send({"type": "http.response.start", "status": 200, "headers": headers})
        for i, chunk in enumerate(chunks):
            more = i < len(chunks) - 1
            await send({"type": "http.response.body", "body": chunk, "more_body": more})

    return WholeNumbers(app, paths=["/"])


async def _get(app: WholeNumbers, path: str = "/") -> httpx.Response:
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app)) as http:
        return await http.post(f"http://agent{path}", json={})


async def test_a_json_answer_is_rewritten_with_its_new_length() -> None:
    body = json.dumps(ANSWER).encode()
    reply = await _get(_app("application/json", [body[:40], body[40:]]))
    assert reply.json()["result"]["artifacts"][0]["parts"][1]["data"]["total_queries"] == 323
    assert '"total_queries":323,' in reply.text
    assert int(reply.headers["content-length"]) == len(reply.content)


async def test_events_split_anywhere_and_crlf_endings_are_rewritten_whole() -> None:
    event = b"event: message\r\ndata: " + json.dumps(ANSWER).encode() + b"\r\n\r\n"
    chunks = [event[:30], event[30:31], event[31:] + event[:10], event[10:]]
    reply = await _get(_app("text/event-stream", chunks))
    lines = reply.content.split(b"\r\n")
    data = [json.loads(line[5:]) for line in lines if line.startswith(b"data:")]
    assert len(data) == 2 and all(d == in_data_parts(ANSWER) for d in data)
    assert reply.content.count(b"\r\n\r\n") == 2 and b'"total_queries":323,' in reply.content


async def test_other_paths_and_bodies_pass_as_they_are() -> None:
    body = json.dumps(ANSWER).encode()
    assert (await _get(_app("application/json", [body]), "/metrics")).content == body
    assert (await _get(_app("text/plain", [b"323.0 not json"]))).content == b"323.0 not json"
    assert (await _get(_app("application/json", [b"{broken"]))).content == b"{broken"
