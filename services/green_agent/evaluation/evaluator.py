"""Send sampled test queries to a retrieval agent and check every reply against the contract.

A failure's message may quote the participant (a task's status text, a doc id it made up): it
is kept cut to :data:`~services.green_agent.evaluation.bounds.MAX_ECHO_CHARS`, so an answer
within the byte bound still cannot make every line of a report that large.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from services.green_agent.evaluation.answer_contract import (
    ContractViolation,
    check_reply,
    loose_doc_ids,
)
from services.green_agent.evaluation.bounds import clip
from services.green_agent.evaluation.client import AgentClient, TransportFailure
from services.green_agent.evaluation.dataset import TestSet
from services.telemetry.tracing import tracer

_tracer = tracer(__name__)


@dataclass(frozen=True)
class QueryOutcome:
    """What happened to one query: the ids returned, or why there are none."""

    query_id: str
    latency_s: float
    doc_ids: list[str] | None = None
    reason: str | None = None
    error: str | None = None
    # ``time.perf_counter()`` when the query was sent: only differences between outcomes of one
    # process mean anything (a load report's timeline); 0.0 where nobody timed the start.
    started_s: float = 0.0
    # What a lenient evaluator reads from the reply (answer_contract.loose_doc_ids); None: no reply.
    loose_doc_ids: list[str] | None = None

    @property
    def ok(self) -> bool:
        """Whether the reply met the contract."""
        return self.doc_ids is not None


async def ask_and_check(
    client: AgentClient,
    query_id: str,
    query: str,
    top_k: int,
    valid_ids: frozenset[str],
    *,
    legacy: bool,
) -> QueryOutcome:
    """Send one query and check its reply; never raises for a failed or broken reply."""
    started = time.perf_counter()
    with _tracer.start_as_current_span("green.query") as span:
        span.set_attribute("query.id", query_id)
        loose: list[str] | None = None
        try:
            reply = await client.ask(query, top_k)
            loose = loose_doc_ids(reply)
            doc_ids = check_reply(reply, top_k, valid_ids, legacy=legacy)
        except (TransportFailure, ContractViolation) as e:
            latency = time.perf_counter() - started
            return QueryOutcome(query_id, latency, None, e.reason, clip(str(e)), started, loose)
    latency = time.perf_counter() - started
    return QueryOutcome(query_id, latency, doc_ids, started_s=started, loose_doc_ids=loose)


async def evaluate(
    client: AgentClient,
    test_set: TestSet,
    query_ids: Sequence[str],
    top_k: int,
    concurrency: int,
    *,
    legacy: bool = False,
    on_result: Callable[[QueryOutcome], Awaitable[None]] | None = None,
) -> tuple[list[QueryOutcome], float]:
    """Ask every query with at most ``concurrency`` in flight.

    Returns:
        The outcomes in ``query_ids`` order, and the wall time of the run in seconds.

    """
    pending = iter(enumerate(query_ids))
    outcomes: list[QueryOutcome | None] = [None] * len(query_ids)

    async def worker() -> None:
        for index, query_id in pending:
            outcome = await ask_and_check(
                client, query_id, test_set.queries[query_id], top_k, test_set.doc_ids, legacy=legacy
            )
            outcomes[index] = outcome
            if on_result is not None:
                await on_result(outcome)

    started = time.perf_counter()
    async with asyncio.TaskGroup() as group:
        for _ in range(max(1, min(concurrency, len(query_ids)))):
            group.create_task(worker())
    wall_s = time.perf_counter() - started
    return [o for o in outcomes if o is not None], wall_s
