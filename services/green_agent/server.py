"""The evaluator as an A2A agent.

It takes an AgentBeats assessment request, streams progress, and ends with one ``results``
artifact (a text summary and the report as data).

Request (message text or data part)::

    {"participants": {"retrieval_agent": "http://purple:9010/"},
     "config": {"num_queries": 50, "top_k": 5, "random_seed": 42}}

``config`` may also set ``concurrency`` and ``protocol`` (``"1.0"`` or ``"0.3"``).
"""

from __future__ import annotations

import asyncio
import json
from functools import cache
from pathlib import Path
from typing import Any, Literal

from a2a.helpers import get_data_parts, get_text_parts, new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, Task, TaskState, TaskStatus
from a2a.utils.errors import UnsupportedOperationError
from pydantic import BaseModel, ConfigDict, Field, HttpUrl, ValidationError

from services.green_agent.client import TransportFailure, connect
from services.green_agent.dataset import TestSet, load_test_set, sample_query_ids
from services.green_agent.evaluator import QueryOutcome, evaluate
from services.green_agent.render import eval_summary
from services.green_agent.report import build_report
from services.green_agent.settings import GreenSettings

ROLE = "retrieval_agent"


class AssessmentConfig(BaseModel):
    """The ``config`` of an assessment request."""

    model_config = ConfigDict(extra="ignore")

    num_queries: int = Field(default=50, ge=1)
    top_k: int = Field(default=5, ge=1, le=100)
    random_seed: int = 42
    concurrency: int | None = Field(default=None, ge=1, le=256)
    protocol: Literal["1.0", "0.3"] | None = None


class AssessmentRequest(BaseModel):
    """An AgentBeats assessment request."""

    participants: dict[str, HttpUrl]
    config: AssessmentConfig = Field(default_factory=AssessmentConfig)


def parse_assessment(message: Message | None) -> AssessmentRequest:
    """Read the request from a data part or the JSON text; ``ValueError`` says what is wrong."""
    parts: Any = list(message.parts) if message is not None else []
    data = get_data_parts(parts)
    try:
        payload = data[0] if data else json.loads("".join(get_text_parts(parts)))
        request = AssessmentRequest.model_validate(payload)
    except json.JSONDecodeError as e:
        raise ValueError(f"the assessment request is not JSON ({e.msg})") from None
    except ValidationError as e:
        problems = "; ".join(
            f"{'.'.join(map(str, err['loc'])) or 'request'}: {err['msg']}"
            for err in e.errors(include_url=False)
        )
        raise ValueError(f"invalid assessment request: {problems}") from None
    if ROLE not in request.participants:
        raise ValueError(f"participants must name a {ROLE!r} (got {sorted(request.participants)})")
    return request


class AssessmentExecutor(AgentExecutor):
    """Runs one evaluation per assessment request."""

    def __init__(self, settings: GreenSettings, data_dir: Path) -> None:
        self._settings = settings
        self._data_dir = data_dir

    @cache  # noqa: B019 - one executor per process; the test set is read once
    def _test_set(self) -> TestSet:
        return load_test_set(self._data_dir)

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Evaluate the named agent, reporting progress as status updates."""
        task = context.current_task or Task(
            id=context.task_id or "",
            context_id=context.context_id or "",
            status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
            history=[context.message] if context.message is not None else [],
        )
        if context.current_task is None:
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)

        def say(text: str) -> Message:
            return updater.new_agent_message([new_text_part(text)])

        try:
            request = parse_assessment(context.message)
            test_set = await asyncio.to_thread(self._test_set)  # first call reads the files
            config = request.config
            query_ids = sample_query_ids(test_set.query_ids, config.num_queries, config.random_seed)
        except ValueError as e:
            await updater.failed(say(str(e)))
            return
        agent = str(request.participants[ROLE])
        protocol = config.protocol or self._settings.protocol
        await updater.start_work(say(f"evaluating {agent} on {len(query_ids)} test queries"))
        try:
            client = await connect(agent, protocol, self._settings.timeout_s)
        except TransportFailure as e:
            await updater.failed(say(f"cannot reach {agent}: {e}"))
            return
        done = 0
        step = max(1, len(query_ids) // 10)

        async def progress(_: QueryOutcome) -> None:
            nonlocal done
            done += 1
            if done % step == 0 and done < len(query_ids):
                await updater.update_status(
                    TaskState.TASK_STATE_WORKING, say(f"{done}/{len(query_ids)} queries done")
                )

        try:
            outcomes, wall_s = await evaluate(
                client,
                test_set,
                query_ids,
                config.top_k,
                config.concurrency or self._settings.concurrency,
                legacy=protocol == "0.3",
                on_result=progress,
            )
        finally:
            await client.aclose()
        report = build_report(
            outcomes,
            test_set.qrels,
            agent=agent,
            protocol=protocol,
            top_k=config.top_k,
            seed=config.random_seed,
            wall_s=wall_s,
        )
        parts = [new_text_part(eval_summary(report)), new_data_part(report.model_dump(mode="json"))]
        await updater.add_artifact(parts, name="results")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        """Refuse: an evaluation runs to its end."""
        raise UnsupportedOperationError(message="cancel is not supported")
