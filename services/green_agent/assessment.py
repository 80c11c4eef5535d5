"""The evaluator as an A2A agent: one assessment per task.

It takes an AgentBeats assessment request, streams progress, and ends with one ``results``
artifact (a text summary and the report as data).

Request (message text or data part)::

    {"participants": {"retrieval_agent": "http://purple:9010/"},
     "config": {"num_queries": 50, "top_k": 5, "random_seed": 42}}

``config`` may also set ``concurrency``, ``protocol`` (``"1.0"`` or ``"0.3"``), the public
evaluator's ``mcp_server_url`` (its vector search calls are counted over the run) and a shard of
a sharded run (:mod:`services.green_agent.shards`). The result's data part holds the public
evaluator's leaderboard keys (:mod:`services.green_agent.compat`) beside our full report.

Every URL of the request must be on an allowed origin (:mod:`services.green_agent.egress`), or
the task fails saying which and why before any request goes out.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass
from functools import cache
from typing import Annotated, Any, Literal

from a2a.helpers import get_data_parts, get_text_parts, new_data_part, new_text_part
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types import Message, TaskState
from a2a.utils.errors import UnsupportedOperationError
from pydantic import AfterValidator, BaseModel, ConfigDict, Field, HttpUrl, ValidationError

from services.green_agent.a2a_handler import open_task
from services.green_agent.client import TransportFailure, connect
from services.green_agent.compat import calls_between, leaderboard_keys, qdrant_calls_total
from services.green_agent.dataset import TestSet, fetch_test_set, sample_query_ids
from services.green_agent.egress import AllowedOrigins
from services.green_agent.evaluator import QueryOutcome, evaluate
from services.green_agent.render import eval_summary
from services.green_agent.report import build_report
from services.green_agent.settings import GreenSettings
from services.green_agent.shards import Shard, shard_fields

ROLE = "retrieval_agent"


def _a_url(value: str) -> str:
    # Checked with the request, as participants are: httpx would raise on "http://[::1/" or
    # port 99999 only when the run asks the server, and the task end in an internal error.
    if value:  # "" names no server, as None does
        HttpUrl(value)
    return value


class AssessmentConfig(BaseModel):
    """The ``config`` of an assessment request."""

    model_config = ConfigDict(extra="ignore")

    num_queries: int = Field(default=50, ge=1)
    top_k: int = Field(default=5, ge=1, le=100)
    random_seed: int = 42
    concurrency: int | None = Field(default=None, ge=1, le=256)
    protocol: Literal["1.0", "0.3"] | None = None
    mcp_server_url: Annotated[str, AfterValidator(_a_url)] | None = None


class AssessmentRequest(BaseModel):
    """An AgentBeats assessment request."""

    participants: dict[str, HttpUrl]
    config: AssessmentConfig = Field(default_factory=AssessmentConfig)
    shard: Shard = Field(default_factory=Shard)  # read from config and assessment_config


def parse_assessment(message: Message | None) -> AssessmentRequest:
    """Read the request from a data part or the JSON text; ``ValueError`` says what is wrong."""
    parts: Any = list(message.parts) if message is not None else []
    data = get_data_parts(parts)
    try:
        payload = data[0] if data else json.loads("".join(get_text_parts(parts)))
        if isinstance(payload, dict):
            payload = {**payload, "shard": shard_fields(payload)}
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


def check_destinations(request: AssessmentRequest, allowed: AllowedOrigins) -> None:
    """Refuse a request naming a URL outside ``allowed``; ``ValueError`` says which and why."""
    named = [(f"participant {role!r}", str(url)) for role, url in request.participants.items()]
    if request.config.mcp_server_url:
        named.append(("config.mcp_server_url", request.config.mcp_server_url))
    for what, url in named:
        if (reason := allowed.refusal(url)) is not None:
            raise ValueError(f"{what} {url} is refused: {reason}")


@dataclass(frozen=True, slots=True)
class Assessment:
    """A parsed request, resolved against the test set: who to ask what, and how."""

    agent: str
    protocol: Literal["1.0", "0.3"]
    config: AssessmentConfig
    test_set: TestSet
    query_ids: list[str]
    shard: Shard


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
        config = request.config
        sample = sample_query_ids(test_set.query_ids, config.num_queries, config.random_seed)
        query_ids = request.shard.slice(sample)
        if not query_ids:
            raise ValueError(f"shard {request.shard.describe()} of {len(sample)} queries is empty")
        agent = str(request.participants[ROLE])
        protocol = config.protocol or self._settings.protocol
        return Assessment(agent, protocol, config, test_set, query_ids, request.shard)

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
