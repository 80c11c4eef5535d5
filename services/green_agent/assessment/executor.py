"""The assessment executor: one evaluation per task, with progress, ending in its results.

Each task takes one assessment request (:mod:`services.green_agent.assessment.request`), streams
progress, and ends with one ``results`` artifact (a text summary and the report as data, with the
public evaluator's leaderboard keys: :mod:`services.green_agent.assessment.leaderboard`).

An assessment runs at most ``GREEN_ASSESSMENT_DEADLINE_S``, each of its queries at most
``GREEN_QUERY_DEADLINE_S`` and each answer at most ``GREEN_MAX_ANSWER_BYTES``
(:mod:`services.green_agent.evaluation.bounds`): a participant cannot hold a place for ever.
``tasks/cancel`` (1.0 ``CancelTask``) stops it: the SDK cancels the execution once
:meth:`AssessmentExecutor.cancel` returns, which gives its place back and sends no further query.
"""

from __future__ import annotations

import asyncio
from functools import cache

from a2a.helpers import new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Task, TaskState, TaskStatus

from services.green_agent.assessment.leaderboard import leaderboard_keys
from services.green_agent.assessment.request import Assessment, check_destinations, parse_assessment
from services.green_agent.assessment.running import Running
from services.green_agent.evaluation.bounds import clip
from services.green_agent.evaluation.client import TransportFailure, connect
from services.green_agent.evaluation.dataset import TestSet, fetch_test_set
from services.green_agent.evaluation.evaluator import QueryOutcome, evaluate
from services.green_agent.evaluation.mcp_counters import calls_between, qdrant_calls_total
from services.green_agent.evaluation.report import build_report, eval_summary
from services.green_agent.settings import GreenSettings
from services.telemetry.tracing import current_trace_id


async def open_task(
    context: RequestContext, event_queue: EventQueue, running: Running
) -> TaskUpdater:
    """The updater of this request's task; a new task is enqueued first, as the SDK requires.

    The task is built by hand rather than with ``new_task_from_user_message``, which refuses an
    empty text part before the executor could fail the task with a useful message. Its metadata
    carries the request's ``trace_id``: the caller finds the trace from the task alone. The
    running execution is registered, to be cancelled if its caller hangs up, and takes over the
    place its request was admitted with.
    """
    running.start(
        Running.key(context.call_context.user if context.call_context else None, context.message)
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

    def __init__(self, settings: GreenSettings, running: Running) -> None:
        self._settings = settings
        self._allowed = settings.origins()
        self._running = running
        # Read at start (an unusable file stops it), again when the file changes.
        self._agent_token = settings.agent_token_source()

    @cache  # noqa: B019 - one executor per process; the test set is read once
    def _test_set(self) -> TestSet:
        s = self._settings
        return fetch_test_set(s.data_dir, s.download_url, s.download_md5)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Evaluate the named agent, reporting progress as status updates."""
        updater = await open_task(context, event_queue, self._running)
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
        deadline_s = self._settings.assessment_deadline_s
        try:
            async with asyncio.timeout(deadline_s):
                outcomes, wall_s = await self._run(assessment, updater)
        except TransportFailure as e:
            await updater.failed(_say(updater, f"cannot reach {agent}: {clip(str(e))}"))
            return
        except TimeoutError:
            stopped = f"stopped after {deadline_s:g} s, the most GREEN_ASSESSMENT_DEADLINE_S allows"
            await updater.failed(_say(updater, f"the assessment of {agent} was {stopped}"))
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
            authorization=self._agent_token.header(),
            allowed=self._allowed,
            bounds=settings.answer_bounds(),
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
        """Let the SDK stop the execution: it cancels it once this returns.

        Nothing is written here: the execution may still be writing progress, and the SDK
        records the task ``canceled`` itself once the execution has stopped.
        """
