"""The purple agent's A2A methods besides ``message/send``: streaming in both dialects, and the
methods it refuses (a message naming an earlier task, push notifications, resubscription).
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.helpers import get_data_parts, get_text_parts
from a2a.types import Message, Part, Role, SendMessageRequest, TaskState

from tests.support.purple import ThreadedServer, v03_body, v10_body

V10 = {"A2A-Version": "1.0"}


async def _stream(purple: ThreadedServer, text: str) -> list[Any]:
    message = Message(role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=text)])
    async with httpx.AsyncClient(timeout=30) as http:
        card = await A2ACardResolver(http, purple.url).get_agent_card()
        client = await create_client(card, ClientConfig(httpx_client=http, streaming=True))
        return [e async for e in client.send_message(SendMessageRequest(message=message))]


async def test_a_1_0_stream_is_the_task_its_artifact_and_its_completion(
    purple: ThreadedServer,
) -> None:
    events = await _stream(purple, json.dumps({"query": "green tea and cancer", "top_k": 3}))
    kinds = [e.WhichOneof("payload") for e in events]
    assert kinds == ["task", "artifact_update", "status_update"]
    task, artifact, status = (getattr(e, k) for e, k in zip(events, kinds, strict=True))
    assert task.status.state == TaskState.TASK_STATE_SUBMITTED
    assert artifact.task_id == status.task_id == task.id
    assert artifact.artifact.name == "retrieval_results"
    (data,) = get_data_parts(artifact.artifact.parts)
    assert len(data["doc_ids"]) == 3
    assert status.status.state == TaskState.TASK_STATE_COMPLETED
    assert not status.status.HasField("message")


async def test_a_stream_that_fails_says_why_in_its_final_status(purple: ThreadedServer) -> None:
    events = await _stream(purple, '{"query": ""}')
    assert [e.WhichOneof("payload") for e in events] == ["task", "status_update"]
    status = events[-1].status_update.status
    assert status.state == TaskState.TASK_STATE_FAILED
    assert get_text_parts(status.message.parts)[0].startswith("invalid request: query must not")


async def test_a_0_3_stream_speaks_0_3(purple: ThreadedServer, http: httpx.AsyncClient) -> None:
    body = v03_body(json.dumps({"query": "vitamin D", "top_k": 2}))
    body["method"] = "message/stream"
    reply = await http.post(purple.url + "/", json=body)
    assert reply.headers["content-type"].startswith("text/event-stream")
    events = [
        json.loads(line.removeprefix("data:"))["result"]
        for line in reply.text.splitlines()
        if line.startswith("data:")
    ]
    assert [e["kind"] for e in events] == ["task", "artifact-update", "status-update"]
    assert len(events[1]["artifact"]["parts"][0]["data"]["doc_ids"]) == 2
    assert events[2]["status"]["state"] == "completed" and events[2]["final"] is True


async def test_a_message_naming_an_earlier_task_is_refused(
    purple: ThreadedServer, http: httpx.AsyncClient
) -> None:
    task = (await http.post(purple.url + "/", json=v03_body('{"query": "x"}'))).json()["result"]
    follow_up = v03_body('{"query": "y"}')
    follow_up["params"]["message"]["taskId"] = task["id"]
    reply = (await http.post(purple.url + "/", json=follow_up)).json()
    # Without authentication no task is kept: there is no task to continue.
    assert reply["error"]["message"] == "Task not found"


@pytest.mark.parametrize(
    ("method", "params"),
    [
        ("CreateTaskPushNotificationConfig", {"taskId": "t", "url": "http://example.com/"}),
        ("GetTaskPushNotificationConfig", {"taskId": "t", "id": "c"}),
        ("ListTaskPushNotificationConfigs", {"taskId": "t"}),
        ("DeleteTaskPushNotificationConfig", {"taskId": "t", "id": "c"}),
        ("GetExtendedAgentCard", {}),
        ("SubscribeToTask", {"id": "t"}),
    ],
)
async def test_methods_without_a_use_here_are_refused_with_an_error(
    purple: ThreadedServer, http: httpx.AsyncClient, method: str, params: dict[str, Any]
) -> None:
    body = {**v10_body([]), "method": method, "params": params}
    reply = await http.post(purple.url + "/", json=body, headers=V10)
    assert reply.status_code == 200
    if reply.headers["content-type"].startswith("text/event-stream"):
        (line,) = [x for x in reply.text.splitlines() if x.startswith("data:")]
        answer = json.loads(line.removeprefix("data:"))
    else:
        answer = reply.json()
    assert "result" not in answer
    assert answer["error"]["code"] not in (-32603, -32700)  # refused, not broken
