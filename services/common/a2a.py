"""A2A plumbing shared by our agents: card parts, the routes, and the opening of ``execute``."""

from __future__ import annotations

import asyncio
import hashlib
import json
from typing import Any

from a2a.auth.user import User
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler, RequestHandler
from a2a.server.request_handlers.response_helpers import agent_card_to_dict
from a2a.server.routes import create_jsonrpc_routes
from a2a.server.tasks import TaskStore, TaskUpdater
from a2a.types import (
    AgentCard,
    AgentInterface,
    AgentProvider,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SecurityRequirement,
    SendMessageRequest,
    StringList,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.constants import PROTOCOL_VERSION_0_3, PROTOCOL_VERSION_1_0
from a2a.utils.errors import UnsupportedOperationError
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import BaseRoute, Route

from services.telemetry.tracing import current_trace_id

ORGANIZATION = "nfcorpus-retrieval"
#: Where the card is served: the root (AgentBeats), the current and the 0.3 well-known paths.
CARD_PATHS = ("/", "/.well-known/agent-card.json", "/.well-known/agent.json")
#: Where JSON-RPC (1.0 and 0.3) is served.
A2A_RPC_PATH = "/"


def jsonrpc_interfaces(url: str) -> list[AgentInterface]:
    """JSON-RPC at ``url`` in A2A 1.0 and 0.3.

    The 0.3 interface is what makes the served card carry the legacy ``url``,
    ``preferredTransport`` and ``protocolVersion`` fields an a2a-sdk 0.3 client requires.
    """
    return [
        AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION_1_0),
        AgentInterface(url=url, protocol_binding="JSONRPC", protocol_version=PROTOCOL_VERSION_0_3),
    ]


def require_bearer(card: AgentCard) -> AgentCard:
    """Declare on ``card`` that requests need ``Authorization: Bearer <token>``."""
    scheme = card.security_schemes["bearer"].http_auth_security_scheme
    scheme.scheme = "bearer"
    scheme.description = "A token issued by the operator of this agent."
    card.security_requirements.append(SecurityRequirement(schemes={"bearer": StringList()}))
    return card


def provider(url: str) -> AgentProvider:
    """Who runs the agent."""
    return AgentProvider(organization=ORGANIZATION, url=url)


class _Running:
    """The executions of requests in flight, by caller and message id.

    The SDK runs the executor in a task of its own, which goes on when the request that started
    it is cancelled (its client hung up: :mod:`services.common.disconnect`). The handler cancels
    it through this registry instead, so an agent stops calling its own backends for nobody. The
    caller's name is part of the key: one caller cannot cancel another's request by reusing its
    message id.
    """

    def __init__(self) -> None:
        self._tasks: dict[tuple[str, str], asyncio.Task[Any]] = {}

    @staticmethod
    def key(user: User | None, message: Message | None) -> tuple[str, str]:
        name = user.user_name if user is not None and user.is_authenticated else ""
        return name, message.message_id if message is not None else ""

    def add(self, key: tuple[str, str]) -> None:
        task = asyncio.current_task()
        if task is None or not key[1]:
            return
        self._tasks[key] = task
        task.add_done_callback(lambda done: self._tasks.pop(key, None))

    def cancel(self, key: tuple[str, str]) -> None:
        task = self._tasks.pop(key, None)
        if task is not None:
            task.cancel()


_RUNNING = _Running()


class _RequestHandler(DefaultRequestHandler):
    """The SDK's handler, but for reading tasks back (get, list), possibly off.

    It also stops the work of callers that have hung up.
    """

    def __init__(
        self, executor: AgentExecutor, tasks: TaskStore, card: AgentCard, *, readable: bool
    ) -> None:
        super().__init__(agent_executor=executor, task_store=tasks, agent_card=card)
        self._readable = readable

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Message | Task:
        """``message/send``; the execution is cancelled if the request is (its client left)."""
        key = _Running.key(context.user, params.message)
        try:
            result: Message | Task = await super().on_message_send(params, context)
        except asyncio.CancelledError:
            _RUNNING.cancel(key)
            raise
        request = asyncio.current_task()
        if request is not None and request.cancelling():
            # The SDK's subscription swallows the cancellation and returns the task unfinished.
            _RUNNING.cancel(key)
            raise asyncio.CancelledError
        return result

    def _refuse_unless_readable(self) -> None:
        if not self._readable:
            raise UnsupportedOperationError(
                message="reading tasks back needs authentication (each caller then sees only "
                "its own tasks); message/send returns the finished task"
            )

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        """``tasks/get``: the caller's own task, when tasks are readable."""
        self._refuse_unless_readable()
        task: Task | None = await super().on_get_task(params, context)
        return task

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        """``tasks/list``: the caller's own tasks, when tasks are readable."""
        self._refuse_unless_readable()
        page: ListTasksResponse = await super().on_list_tasks(params, context)
        return page


def a2a_routes(
    card: AgentCard, executor: AgentExecutor, tasks: TaskStore, *, readable_tasks: bool = True
) -> list[BaseRoute]:
    """The card at every :data:`CARD_PATHS` and the executor behind JSON-RPC (1.0 and 0.3).

    ``readable_tasks`` false refuses ``tasks/get`` and ``tasks/list``: without authentication
    there is no caller to scope them to.
    """
    return handler_routes(card, _RequestHandler(executor, tasks, card, readable=readable_tasks))


def handler_routes(card: AgentCard, handler: RequestHandler) -> list[BaseRoute]:
    """The card at every :data:`CARD_PATHS` and ``handler`` behind JSON-RPC 1.0 and 0.3."""
    jsonrpc = create_jsonrpc_routes(handler, rpc_url=A2A_RPC_PATH, enable_v0_3_compat=True)
    return [*card_routes(card), *jsonrpc]


def card_routes(card: AgentCard) -> list[BaseRoute]:
    """``GET`` of the card at every :data:`CARD_PATHS`, rendered once.

    The same bytes and ETag as the SDK's card route (the 1.0 card with the 0.3 fields merged in,
    a weak ETag over its sorted JSON, 304 when ``If-None-Match`` names it), but that route
    converts and renders the card on every request (0.3 ms of CPU, measured), and a 0.3 green
    agent fetches the card before every query. Our cards do not change while the process runs.
    """
    rendered = agent_card_to_dict(card)
    unsigned = {k: v for k, v in rendered.items() if k != "signatures"}
    digest = hashlib.sha256(json.dumps(unsigned, sort_keys=True, separators=(",", ":")).encode())
    etag = f'W/"{digest.hexdigest()}"'
    body = json.dumps(rendered, ensure_ascii=False, separators=(",", ":")).encode()

    async def serve_card(request: Request) -> Response:
        wanted = [tag.strip() for tag in request.headers.get("if-none-match", "").split(",")]
        if "*" in wanted or etag.removeprefix("W/") in (t.removeprefix("W/") for t in wanted):
            return Response(status_code=304, headers={"ETag": etag})
        return Response(body, media_type="application/json", headers={"ETag": etag})

    return [Route(path, serve_card, methods=["GET"]) for path in CARD_PATHS]


async def open_task(context: RequestContext, event_queue: EventQueue) -> TaskUpdater:
    """The updater of this request's task; a new task is enqueued first, as the SDK requires.

    The task is built by hand rather than with ``new_task_from_user_message``, which refuses an
    empty text part before the executor could fail the task with a useful message. Its metadata
    carries the request's ``trace_id``: the caller finds the trace from the task alone. The
    running execution is registered, to be cancelled if its caller hangs up.
    """
    _RUNNING.add(
        _Running.key(context.call_context.user if context.call_context else None, context.message)
    )
    task = context.current_task
    if task is None:
        task = Task(
            id=context.task_id or "",
            context_id=context.context_id or "",
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
            history=[context.message] if context.message is not None else [],
        )
        if (trace_id := current_trace_id()) is not None:
            task.metadata.update({"trace_id": trace_id})
        await event_queue.enqueue_event(task)
    return TaskUpdater(event_queue, task.id, task.context_id)
