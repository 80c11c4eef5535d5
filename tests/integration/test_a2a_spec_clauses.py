"""A2A 1.0 clauses the A2A TCK found us short of, each held on both agents, with and without auth.

Four real servers on loopback: the purple agent (in-process, over the real MCP server) and the
green agent's A2A server (``python -m services.green_agent serve``), each open and with bearer
tokens. Requests go over the wire as clients send them: raw JSON-RPC with ``httpx`` where the
bytes matter, a2a-sdk 1.x clients where a client's reading does. Each test's docstring names the
clause of the A2A specification (1.0) it holds. ``docs/conformance.md`` says what the TCK
checks and why its remaining failures are its own.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.client import A2ACardResolver, ClientConfig, create_client
from a2a.compat.v0_3.types import AgentCard as AgentCard03
from a2a.helpers import get_data_parts
from a2a.types import AgentCard, GetTaskRequest, Message, Part, Role, SendMessageRequest, TaskState
from a2a.utils.errors import JSON_RPC_ERROR_CODE_MAP
from google.protobuf.json_format import ParseDict  # type: ignore[import-untyped]  # no stubs

from harness.processes import McpServer, ServerProcess
from services.common.a2a import CARD_PATHS
from services.common.auth import UNAUTHENTICATED
from services.purple_agent.settings import PurpleSettings
from tests.support.polling import wait_for
from tests.support.ports import closed_url
from tests.support.purple import ThreadedServer, v03_body, v10_body

ALICE = "alice-token-0123456789"
BOB = "bob-token-0123456789"
TOKENS = f"alice:{ALICE},bob:{BOB}"
V10 = {"a2a-version": "1.0"}
INVALID_PARAMS, TASK_NOT_FOUND, UNSUPPORTED = -32602, -32001, -32004
#: Every code A2A 1.0 gives an error of its own (5.4), and JSON-RPC's (9.5).
SPEC_CODES = {*JSON_RPC_ERROR_CODE_MAP.values()}
QUERY = json.dumps({"query": "vitamin D and bone health", "top_k": 5})


@dataclass(frozen=True)
class Agent:
    """One server under test: which agent, its base URL, and the token it wants (None: open)."""

    kind: str
    url: str
    token: str | None
    nobody: str  # a participant URL whose port refuses every connection

    def headers(self, token: str | None = None, **more: str) -> dict[str, str]:
        """A2A 1.0's header, and the bearer token (``token``, else the agent's own)."""
        bearer = token or self.token
        return {**V10, **more, **({"authorization": f"Bearer {bearer}"} if bearer else {})}

    def rpc(self, method: str, params: dict[str, Any], token: str | None = None) -> Any:
        """A 1.0 JSON-RPC call over the wire; the decoded answer."""
        body = {"jsonrpc": "2.0", "id": uuid.uuid4().hex, "method": method, "params": params}
        answer = httpx.post(self.url + "/", json=body, headers=self.headers(token), timeout=60)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def send(self, config: dict[str, Any] | None = None) -> Any:
        """``SendMessage`` of the request this agent takes, ``config`` its configuration; the answer.

        Its result, when it has one, is ``{"task": {...}}``.
        """
        body = v10_body([{"text": self.request_text()}])
        if config is not None:
            body["params"]["configuration"] = config
        answer = httpx.post(self.url + "/", json=body, headers=self.headers(), timeout=60)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def request_text(self) -> str:
        """A request this agent answers quickly: a query, or an assessment of nobody."""
        if self.kind == "purple":
            return QUERY
        # Every query fails at once: the assessment ends.
        request = {"participants": {"retrieval_agent": self.nobody}, "config": {"num_queries": 1}}
        return json.dumps(request)


@pytest.fixture(scope="module")
def agents(mcp_server: McpServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """The four servers, by ``<kind>-<open|auth>``."""
    logs = tmp_path_factory.mktemp("green-logs")
    purple_open = ThreadedServer(PurpleSettings(mcp_url=mcp_server.mcp_url))
    purple_auth = ThreadedServer(PurpleSettings(mcp_url=mcp_server.mcp_url, auth_tokens=TOKENS))
    greens = {
        name: ServerProcess.module(
            "services.green_agent",
            ["serve"],
            env=env,
            ready_path="/healthz",
            log_path=Path(logs) / f"{name}.log",
        )
        for name, env in (("green-open", {}), ("green-auth", {"GREEN_AUTH_TOKENS": TOKENS}))
    }
    servers = (purple_open, purple_auth, greens["green-open"], greens["green-auth"])
    with closed_url() as nobody, servers[0], servers[1], servers[2], servers[3]:
        yield {
            "purple-open": Agent("purple", purple_open.url, None, nobody),
            "purple-auth": Agent("purple", purple_auth.url, ALICE, nobody),
            "green-open": Agent("green", greens["green-open"].base_url, None, nobody),
            "green-auth": Agent("green", greens["green-auth"].base_url, ALICE, nobody),
        }


EVERY = pytest.mark.parametrize("name", ["purple-open", "purple-auth", "green-open", "green-auth"])
OPEN = pytest.mark.parametrize("name", ["purple-open", "green-open"])
SECURED = pytest.mark.parametrize("name", ["purple-auth", "green-auth"])


def _code(answer: Any) -> int | None:
    error = answer.get("error")
    return error["code"] if error else None


@EVERY
def test_list_tasks_refuses_a_status_that_is_no_task_state(
    agents: dict[str, Agent], name: str
) -> None:
    """A2A 3.1.4 (ListTasks), 3.3.2 (validation errors): an unknown status is -32602.

    The SDK's protobuf reader drops unknown enum values, which listed every task. Only the
    JSON-RPC binding is served (the card names no other), so no REST path lists tasks.
    """
    agent = agents[name]
    for status in ("INVALID_STATUS", "working", 99, True):
        answer = agent.rpc("ListTasks", {"status": status})
        assert _code(answer) == INVALID_PARAMS, (status, answer)
        assert "is not a task state" in answer["error"]["message"]
    assert "result" in agent.rpc("ListTasks", {"status": "TASK_STATE_COMPLETED"})
    card = httpx.get(agent.url + "/.well-known/agent-card.json", headers=V10).json()
    assert {i["protocolBinding"] for i in card["supportedInterfaces"]} == {"JSONRPC"}


@SECURED
async def test_return_immediately_answers_at_once_and_the_task_is_read_later(
    agents: dict[str, Agent], name: str
) -> None:
    """A2A 3.2.2 (returnImmediately): the task in progress at once, its result by GetTask.

    As an a2a-sdk 1.x client asks it (``ClientConfig(polling=True)``), and as a 0.3 client
    does (``blocking: false``).
    """
    agent = agents[name]
    message = Message(
        role=Role.ROLE_USER, message_id=uuid.uuid4().hex, parts=[Part(text=agent.request_text())]
    )
    async with httpx.AsyncClient(headers=agent.headers(), timeout=60) as http:
        card = await A2ACardResolver(http, agent.url).get_agent_card()
        client = await create_client(
            card, ClientConfig(httpx_client=http, streaming=False, polling=True)
        )
        (event,) = [e async for e in client.send_message(SendMessageRequest(message=message))]
        task = event.task
        assert task.status.state in (TaskState.TASK_STATE_SUBMITTED, TaskState.TASK_STATE_WORKING)
        final = (TaskState.TASK_STATE_COMPLETED, TaskState.TASK_STATE_FAILED)
        read = task
        async with asyncio.timeout(60):  # a safety net: the answer takes milliseconds
            while read.status.state not in final:
                await asyncio.sleep(0.05)
                read = await client.get_task(GetTaskRequest(id=task.id))
    if agent.kind == "purple":
        assert read.status.state == TaskState.TASK_STATE_COMPLETED
        (data,) = get_data_parts(read.artifacts[0].parts)
        blocking = agent.send()["result"]["task"]["artifacts"][0]["parts"][0]["data"]
        assert data == blocking  # the same ranking as a blocking send
    body = v03_body(agent.request_text())
    body["params"]["configuration"] = {"blocking": False}
    headers = {"authorization": f"Bearer {agent.token}"}
    async with httpx.AsyncClient(headers=headers, timeout=60) as http:
        legacy = (await http.post(agent.url + "/", json=body)).json()
    assert legacy["result"]["status"]["state"] in ("submitted", "working"), legacy


@OPEN
def test_return_immediately_is_refused_where_no_task_can_be_read_back(
    agents: dict[str, Agent], name: str
) -> None:
    """A2A 3.2.2 (returnImmediately) and 3.3.2 (UnsupportedOperationError): refused, saying why.

    Without authentication no task can be read back, so the answer would be lost; a blocking
    send is answered as before. A 0.3 client's ``blocking: false`` is refused alike.
    """
    agent = agents[name]
    refused = agent.send({"returnImmediately": True})
    assert _code(refused) == UNSUPPORTED, refused
    assert "needs authentication" in refused["error"]["message"]
    assert "without it to get the finished task" in refused["error"]["message"]
    final = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED"}
    answered = agent.send({"returnImmediately": False})["result"]["task"]
    assert answered["status"]["state"] in final
    body = v03_body(agent.request_text())
    body["params"]["configuration"] = {"blocking": False}
    legacy = httpx.post(agent.url + "/", json=body, timeout=60).json()
    assert _code(legacy) == UNSUPPORTED and "needs authentication" in legacy["error"]["message"]


@EVERY
def test_a_missing_or_wrong_token_is_401_with_a_code_of_its_own(
    agents: dict[str, Agent], name: str
) -> None:
    """A2A 7.4 (authentication), 5.4 (error codes): 401, a challenge, no other error's code.

    It was -32001, TaskNotFoundError's. Open, the same request is answered.
    """
    agent = agents[name]
    body = {"jsonrpc": "2.0", "id": 1, "method": "ListTasks", "params": {}}
    for token in (None, "not-a-token-0123456789"):
        headers = {**V10, **({"authorization": f"Bearer {token}"} if token else {})}
        answer = httpx.post(agent.url + "/", json=body, headers=headers, timeout=30)
        if agent.token is None:
            assert answer.status_code == 200 and "result" in answer.json(), answer.text
            continue
        assert answer.status_code == 401
        assert answer.headers["www-authenticate"].startswith("Bearer ")
        code = answer.json()["error"]["code"]
        assert code == UNAUTHENTICATED and code not in SPEC_CODES
        assert -32099 <= code <= -32000  # JSON-RPC's server-error range


@OPEN
def test_without_authentication_no_task_is_found_and_lists_are_empty(
    agents: dict[str, Agent], name: str
) -> None:
    """A2A 3.1.3/3.1.4 and 13.1: TaskNotFound for any id, an empty page, parameters checked.

    Every caller is the same anonymous one, so none may read a task back: the answers A2A
    gives a task the caller may not see (3.3.2), not -32004.
    """
    agent = agents[name]
    sent = agent.send()["result"]["task"]
    for task_id in (sent["id"], "no-such-task"):
        answer = agent.rpc("GetTask", {"id": task_id})
        assert _code(answer) == TASK_NOT_FOUND, answer
    page = agent.rpc("ListTasks", {})["result"]
    assert page.get("tasks", []) == [] and page.get("nextPageToken", "") == ""
    for bad in ({"pageSize": 0}, {"pageSize": 101}, {"historyLength": -1}, {"pageToken": "x!"}):
        assert _code(agent.rpc("ListTasks", bad)) == INVALID_PARAMS, bad
    assert _code(agent.rpc("GetTask", {"id": sent["id"], "historyLength": -1})) == INVALID_PARAMS


@SECURED
def test_with_authentication_each_caller_reads_its_own_tasks(
    agents: dict[str, Agent], name: str
) -> None:
    """A2A 13.1 (authorization scoping): a caller reads its own tasks; another's is not found."""
    agent = agents[name]
    sent = agent.send()["result"]["task"]
    assert agent.rpc("GetTask", {"id": sent["id"]})["result"]["id"] == sent["id"]
    assert _code(agent.rpc("GetTask", {"id": sent["id"]}, token=BOB)) == TASK_NOT_FOUND
    assert sent["id"] in [t["id"] for t in agent.rpc("ListTasks", {})["result"]["tasks"]]
    assert sent["id"] not in [
        t["id"] for t in agent.rpc("ListTasks", {}, token=BOB)["result"].get("tasks", [])
    ]
    assert _code(agent.rpc("ListTasks", {"pageSize": 0})) == INVALID_PARAMS


@EVERY
async def test_the_1_0_card_has_security_schemes_of_one_kind_and_the_0_3_card_its_own(
    agents: dict[str, Agent], name: str
) -> None:
    """A2A 4.5.1 (SecurityScheme: a oneof) for the 1.0 card; the 0.3 card keeps its 0.3 shape.

    A request naming A2A 1.0 gets the 1.0 card, which protobuf reads with no field left over;
    one naming no version (0.3, A2A 3.6.2) the card a 0.3 client reads, with ``type`` and
    ``scheme``. An a2a-sdk 1.x resolver reads both as the same bearer scheme.
    """
    agent = agents[name]
    async with httpx.AsyncClient(base_url=agent.url, timeout=30) as http:
        cards = [
            ((await http.get(path, headers=V10)).json(), (await http.get(path)).json())
            for path in CARD_PATHS
        ]
    for current, legacy in cards:
        ParseDict(current, AgentCard())  # strict: any 0.3 field would be refused
        AgentCard03.model_validate(legacy)  # what an a2a-sdk 0.3 client does
        if agent.token is None:
            assert "securitySchemes" not in current and "securitySchemes" not in legacy
            continue
        (scheme,) = current["securitySchemes"].values()
        assert list(scheme) == ["httpAuthSecurityScheme"]
        assert scheme["httpAuthSecurityScheme"]["scheme"] == "bearer"
        (old,) = legacy["securitySchemes"].values()
        assert (old["type"], old["scheme"]) == ("http", "bearer") and set(old) <= {
            "type",
            "scheme",
            "description",
            "bearerFormat",
        }
        assert legacy["security"] == [{"bearer": []}]
    async with httpx.AsyncClient(timeout=30) as http:
        for headers in (V10, {}):
            resolved = await A2ACardResolver(http, agent.url).get_agent_card(
                http_kwargs={"headers": headers}
            )
            if agent.token is not None:
                assert resolved.security_schemes["bearer"].http_auth_security_scheme.scheme == (
                    "bearer"
                )


@EVERY
def test_every_card_path_says_how_long_it_may_be_cached(
    agents: dict[str, Agent], name: str
) -> None:
    """A2A 8.6.1 (caching): Cache-Control with max-age and an ETag on every card path.

    Public: the card is served to anyone, authentication on or off. Each version has its own
    ETag, ``Vary: A2A-Version`` keeps caches from mixing them, and a 304 says the same.
    """
    agent = agents[name]
    for path in CARD_PATHS:
        for headers in (V10, {}):
            served = httpx.get(agent.url + path, headers=headers)
            assert served.status_code == 200
            cache_control = [d.strip() for d in served.headers["cache-control"].split(",")]
            assert "public" in cache_control
            assert any(d.startswith("max-age=") and int(d[8:]) > 0 for d in cache_control)
            assert served.headers["vary"] == "A2A-Version"
            etag = served.headers["etag"]
            again = httpx.get(agent.url + path, headers={**headers, "if-none-match": etag})
            assert (again.status_code, again.content) == (304, b"")
            assert again.headers["etag"] == etag
            assert again.headers["cache-control"] == served.headers["cache-control"]
    if agent.token is not None:  # the two versions differ (the security scheme's shape)
        tags = {httpx.get(agent.url + "/", headers=h).headers["etag"] for h in (V10, {})}
        assert len(tags) == 2


@EVERY
def test_a_task_answered_at_once_is_cancelled_or_finished_never_lost(
    agents: dict[str, Agent], name: str
) -> None:
    """A2A 3.1.5 (CancelTask) on what 3.2.2 returns: a caller's task ends, or is not found."""
    agent = agents[name]
    if agent.token is None:
        assert _code(agent.rpc("CancelTask", {"id": "no-such-task"})) == TASK_NOT_FOUND
        return
    sent = agent.send({"returnImmediately": True})["result"]["task"]
    agent.rpc("CancelTask", {"id": sent["id"]})  # cancelled, or already finished: not cancelable
    final = {"TASK_STATE_COMPLETED", "TASK_STATE_FAILED", "TASK_STATE_CANCELED"}

    def ended() -> bool:
        return agent.rpc("GetTask", {"id": sent["id"]})["result"]["status"]["state"] in final

    wait_for(ended, 60, "the task's end")
