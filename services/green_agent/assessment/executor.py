"""The evaluator as an A2A agent: its card, the SDK's request handler, one assessment per task.

The app serves A2A JSON-RPC (1.0 and 0.3) and the card at ``/``, in the frame. With
``GREEN_AUTH_TOKENS[_FILE]`` every request but the card, ``/healthz`` and ``/metrics`` needs a
caller's token (:mod:`services.common.auth`), and each caller reads back only its own tasks.

An assessment runs for long and reports progress, which is what the SDK's
``DefaultRequestHandler`` is built for; around it, ``tasks/get`` and ``tasks/list`` are refused
without authentication, and an execution is cancelled when its caller hangs up. Each task takes
one assessment request (:mod:`services.green_agent.assessment.request`), streams progress, and
ends with one ``results`` artifact (a text summary and the report as data).
"""

from __future__ import annotations

import asyncio
import logging
from functools import cache
from typing import Any

from a2a.auth.user import User
from a2a.helpers import new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.context import ServerCallContext
from a2a.server.events import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import InMemoryTaskStore, TaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentSkill,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    SendMessageRequest,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.errors import UnsupportedOperationError
from starlette.applications import Starlette
from starlette.routing import BaseRoute

from services.common.a2a import (
    A2A_RPC_PATH,
    CARD_PATHS,
    handler_routes,
    jsonrpc_interfaces,
    provider,
    require_bearer,
)
from services.common.a2a_input import message_problem
from services.common.frame import ServiceId, service_app
from services.green_agent.assessment.json_numbers import WholeNumbers
from services.green_agent.assessment.leaderboard import leaderboard_keys
from services.green_agent.assessment.request import Assessment, check_destinations, parse_assessment
from services.green_agent.evaluation.client import TransportFailure, connect
from services.green_agent.evaluation.dataset import TestSet, fetch_test_set
from services.green_agent.evaluation.egress import SETTING
from services.green_agent.evaluation.evaluator import QueryOutcome, evaluate
from services.green_agent.evaluation.mcp_counters import calls_between, qdrant_calls_total
from services.green_agent.evaluation.report import build_report, eval_summary
from services.green_agent.settings import GreenSettings
from services.telemetry.tracing import current_trace_id

SERVICE = ServiceId(metric_prefix="green", trace_name="green-agent")
_log = logging.getLogger(__name__)

EXAMPLE = (
    '{"participants": {"retrieval_agent": "http://127.0.0.1:9010/"}, '
    '"config": {"num_queries": 50, "top_k": 5, "random_seed": 42}}'
)


def build_card(url: str, *, authenticated: bool = False) -> AgentCard:
    """Build the evaluator's card announcing ``url`` (and the bearer scheme, when it wants one)."""
    skill = AgentSkill(
        id="nfcorpus_assessment",
        name="NFCorpus retrieval assessment",
        description=(
            "Samples NFCorpus test queries with a seed, sends each to the participant "
            "'retrieval_agent' over A2A, checks every reply against the answer contract and "
            "reports NDCG@5/@10 (trec_eval), MRR, precision, recall, latency and failures."
        ),
        tags=["evaluation", "retrieval", "nfcorpus", "agentbeats"],
        examples=[EXAMPLE],
        input_modes=["text/plain", "application/json"],
        output_modes=["text/plain", "application/json"],
    )
    card = AgentCard(
        name="NFCorpus retrieval evaluator",
        description="Green agent: evaluates a retrieval agent on the NFCorpus test split.",
        version="0.1.0",
        provider=provider(url),
        supported_interfaces=jsonrpc_interfaces(url),
        capabilities=AgentCapabilities(streaming=True, push_notifications=False),
        default_input_modes=["text/plain", "application/json"],
        default_output_modes=["text/plain", "application/json"],
        skills=[skill],
    )
    return require_bearer(card) if authenticated else card


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
    """The card at every :data:`~services.common.a2a.CARD_PATHS` and the executor behind JSON-RPC (1.0 and 0.3).

    ``readable_tasks`` false refuses ``tasks/get`` and ``tasks/list``: without authentication
    there is no caller to scope them to.
    """
    return handler_routes(card, _RequestHandler(executor, tasks, card, readable=readable_tasks))


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


def _say(updater: TaskUpdater, text: str) -> Message:
    return updater.new_agent_message([new_text_part(text)])


class AssessmentExecutor(AgentExecutor):
    """Runs one evaluation per assessment request: parse, run, report."""

    def __init__(self, settings: GreenSettings) -> None:
        self._settings = settings
        self._allowed = settings.origins()

    @cache  # noqa: B019 - one executor per process; the test set is read once
    def _test_set(self) -> TestSet:
        s = self._settings
        return fetch_test_set(s.data_dir, s.download_url, s.download_md5)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Evaluate the named agent, reporting progress as status updates."""
        updater = await open_task(context, event_queue)
        try:
            assessment = await self._parse(context.message)
        except ValueError as e:
            await updater.failed(_say(updater, str(e)))
            return
        agent, queries = assessment.agent, len(assessment.query_ids)
        shard = assessment.shard.describe()
        of_shard = f" (shard {shard['shard_index']} of {shard['num_shards']})" if shard else ""
        await updater.start_work(
            _say(updater, f"evaluating {agent} on {queries} test queries{of_shard}")
        )
        server = assessment.config.mcp_server_url
        calls_before = await qdrant_calls_total(server, self._allowed)
        try:
            outcomes, wall_s = await self._run(assessment, updater)
        except TransportFailure as e:
            await updater.failed(_say(updater, f"cannot reach {agent}: {e}"))
            return
        calls = calls_between(calls_before, await qdrant_calls_total(server, self._allowed))
        await self._report(assessment, outcomes, wall_s, calls, updater)

    async def _parse(self, message: Message | None) -> Assessment:
        """The request and its sample of test queries; ``ValueError`` says what is wrong."""
        request = parse_assessment(message)
        check_destinations(request, self._allowed)
        test_set = await asyncio.to_thread(self._test_set)  # the first call reads the files
        return Assessment.resolve(request, test_set, self._settings.protocol)

    async def _run(
        self, assessment: Assessment, updater: TaskUpdater
    ) -> tuple[list[QueryOutcome], float]:
        """Ask every sampled query, with a status update every tenth of the way."""
        a = assessment
        settings = self._settings
        client = await connect(
            a.agent,
            a.protocol,
            settings.timeout_s,
            authorization=settings.agent_authorization(),
            allowed=self._allowed,
        )
        done = 0
        step = max(1, len(a.query_ids) // 10)

        async def progress(_: QueryOutcome) -> None:
            nonlocal done
            done += 1
            if done % step == 0 and done < len(a.query_ids):
                message = _say(updater, f"{done}/{len(a.query_ids)} queries done")
                await updater.update_status(TaskState.TASK_STATE_WORKING, message)

        try:
            return await evaluate(
                client,
                a.test_set,
                a.query_ids,
                a.config.top_k,
                a.config.concurrency or self._settings.concurrency,
                legacy=a.protocol == "0.3",
                on_result=progress,
            )
        finally:
            await client.aclose()

    async def _report(
        self,
        assessment: Assessment,
        outcomes: list[QueryOutcome],
        wall_s: float,
        vector_search_calls: int | None,
        updater: TaskUpdater,
    ) -> None:
        """Complete the task with one ``results`` artifact: a text summary and the report."""
        a = assessment
        report = build_report(
            outcomes,
            a.test_set.qrels,
            agent=a.agent,
            protocol=a.protocol,
            top_k=a.config.top_k,
            seed=a.config.random_seed,
            wall_s=wall_s,
        )
        keys = leaderboard_keys(
            outcomes, a.test_set.qrels, a.config.top_k, wall_s, vector_search_calls
        )
        data = {**keys, **report.model_dump(mode="json"), "shard": a.shard.describe()}
        parts = [new_text_part(eval_summary(report)), new_data_part(data)]
        await updater.add_artifact(parts, name="results")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Refuse: an evaluation runs to its end."""
        raise UnsupportedOperationError(message="cancel is not supported")


def create_app(settings: GreenSettings) -> Starlette:
    """Build the evaluator's app; the test set is read on the first assessment.

    Raises:
        ValueError: a token is unusable (:class:`~services.common.auth.TokenError`).

    """
    tokens = settings.tokens()
    if settings.origins().any:
        _log.warning(
            "%s=*: an assessment may name any URL, and the evaluator's token goes there", SETTING
        )
    card = build_card(settings.public_url, authenticated=bool(tokens))
    routes = a2a_routes(card, AssessmentExecutor(settings), InMemoryTaskStore())
    checks = {A2A_RPC_PATH: message_problem}
    app = service_app(
        SERVICE,
        routes,
        jsonrpc_paths=[A2A_RPC_PATH],
        body_checks=checks,
        tokens=tokens,
        public_get_paths=CARD_PATHS,
    )
    # Outermost: the result's counts leave as integers whichever protocol asked.
    app.add_middleware(WholeNumbers, paths=[A2A_RPC_PATH])
    return app
