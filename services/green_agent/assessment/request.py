"""The AgentBeats assessment request: its parts, a sharded run's slices, whom to ask what.

Request (message text or data part)::

    {"participants": {"retrieval_agent": "http://purple:9010/"},
     "config": {"num_queries": 50, "top_k": 5, "random_seed": 42}}

``config`` may also set ``concurrency``, ``protocol`` (``"1.0"`` or ``"0.3"``), the public
evaluator's ``mcp_server_url`` (its vector search calls are counted over the run:
:mod:`services.green_agent.evaluation.mcp_counters`) and a shard of a sharded run. Every URL of
the request must be on an allowed origin (:mod:`services.green_agent.evaluation.egress`) and
carry no user information, query or fragment (:mod:`services.green_agent.evaluation.urls`: the
paths the evaluator calls are joined to it), or the task fails saying which and why before any
request goes out.

Shards: an AgentBeats leaderboard that shards a run sends every green agent instance the same
request with ``shard_index`` and ``num_shards`` in its config, or in an ``assessment_config``
object beside it, and ``num_instances`` when the run is cut: the leaderboard template's
workflows take it as the total number of task instances across all shards, empty for all. Every
shard draws the same seeded sample of ``num_queries``, keeps its first ``num_instances`` queries
(all of them when it is not given or not smaller), then every ``num_shards``-th query of those
from its index on: the slices are disjoint, their union is the queries of the unsharded run with
the same ``num_instances``, and their sizes differ by at most one. A shard left with no query
(``num_instances`` below ``num_shards``) fails its task.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Annotated, Any

from a2a.helpers import get_data_parts, get_text_parts
from a2a.types import Message
from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    HttpUrl,
    ValidationError,
    model_validator,
)

from services.common.validation import problems
from services.green_agent.evaluation import urls
from services.green_agent.evaluation.client import A2AVersion
from services.green_agent.evaluation.dataset import TestSet, sample_query_ids
from services.green_agent.evaluation.egress import AllowedOrigins

ROLE = "retrieval_agent"
SHARD_KEYS = ("shard_index", "num_shards", "num_instances")


class Shard(BaseModel):
    """Which queries of a run's sample one assessment evaluates (all of them when none is named).

    ``shard_index`` of ``num_shards`` names the shard; ``num_instances`` is the number of task
    instances of the whole run, across its shards (the first ones of the sample), as the
    AgentBeats leaderboard template means it.
    """

    model_config = ConfigDict(extra="ignore")

    shard_index: int | None = Field(default=None, ge=0)
    num_shards: int | None = Field(default=None, ge=1)
    num_instances: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _consistent(self) -> Shard:
        if self.shard_index is not None and self.num_shards is None:
            raise ValueError("shard_index needs num_shards")
        if self.shard_index is None and self.num_shards not in (None, 1):
            raise ValueError("num_shards needs shard_index")
        index, count = self.shard_index, self.num_shards
        if index is not None and count is not None and index >= count:
            raise ValueError(f"shard_index must be below {count}, got {index}")
        return self

    def instances(self, sample: Sequence[str]) -> list[str]:
        """The run's queries, every shard's together: the first ``num_instances`` of the sample."""
        return list(sample[: self.num_instances])

    def slice(self, sample: Sequence[str]) -> list[str]:
        """The queries of the run's sample this shard evaluates, in the sample's order."""
        run = self.instances(sample)
        if self.shard_index is None or self.num_shards is None:
            return run
        return run[self.shard_index :: self.num_shards]

    def describe(self) -> dict[str, int] | None:
        """The shard for the report (``num_instances`` when given), or None for a whole run."""
        if self.shard_index is None and self.num_instances is None:
            return None
        described = {"shard_index": self.shard_index or 0, "num_shards": self.num_shards or 1}
        if self.num_instances is not None:
            described["num_instances"] = self.num_instances
        return described


def shard_fields(payload: Any) -> dict[str, Any]:
    """The shard keys of a request: from ``config``, overridden by ``assessment_config``."""
    if not isinstance(payload, dict):
        return {}
    fields: dict[str, Any] = {}
    for where in ("config", "assessment_config"):
        section = payload.get(where)
        if isinstance(section, dict):
            fields |= {k: section[k] for k in SHARD_KEYS if k in section}
    return fields


def _plain(value: object) -> object:
    # Read as written, before HttpUrl parses it (it may drop an empty "?" or "#").
    if isinstance(value, str) and (reason := urls.refusal(value)) is not None:
        raise ValueError(reason)
    return value


def _a_url(value: str) -> str:
    # Checked with the request, as participants are: httpx would raise on "http://[::1/" or
    # port 99999 only when the run asks the server, and the task end in an internal error.
    if value:  # "" names no server, as None does
        _plain(value)
        HttpUrl(value)
    return value


class AssessmentConfig(BaseModel):
    """The ``config`` of an assessment request."""

    model_config = ConfigDict(extra="ignore")

    num_queries: int = Field(default=50, ge=1)
    top_k: int = Field(default=5, ge=1, le=100)
    random_seed: int = 42
    concurrency: int | None = Field(default=None, ge=1, le=256)
    protocol: A2AVersion | None = None
    mcp_server_url: Annotated[str, AfterValidator(_a_url)] | None = None


class AssessmentRequest(BaseModel):
    """An AgentBeats assessment request."""

    participants: dict[str, Annotated[HttpUrl, BeforeValidator(_plain)]]
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
        listed = "; ".join(f"{p.field}: {p.message}" for p in problems(e, root="request"))
        raise ValueError(f"invalid assessment request: {listed}") from None
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
    protocol: A2AVersion
    config: AssessmentConfig
    test_set: TestSet
    query_ids: list[str]
    shard: Shard

    @classmethod
    def resolve(
        cls, request: AssessmentRequest, test_set: TestSet, protocol: A2AVersion
    ) -> Assessment:
        """The request's sample of test queries (its shard's slice) and whom to ask them.

        ``protocol`` is the evaluator's own, for a request that names none.

        Raises:
            ValueError: the sample cannot be drawn, or the shard's slice of it is empty.

        """
        config = request.config
        sample = sample_query_ids(test_set.query_ids, config.num_queries, config.random_seed)
        query_ids = request.shard.slice(sample)
        if not query_ids:
            run = len(request.shard.instances(sample))
            raise ValueError(f"shard {request.shard.describe()} of {run} queries is empty")
        agent = str(request.participants[ROLE])
        return cls(agent, config.protocol or protocol, config, test_set, query_ids, request.shard)
