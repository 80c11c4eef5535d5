"""Sharded assessments: each shard of a leaderboard's run evaluates its own slice of the queries.

An AgentBeats leaderboard that shards a run sends every green agent instance the same request
with ``shard_index`` and ``num_shards`` (and ``num_instances``, the instances running at once)
in its config, or in an ``assessment_config`` object beside it. Every shard draws the same
seeded sample, then keeps every ``num_shards``-th query from its index on: the slices are
disjoint, their union is the unsharded run's sample, and their sizes differ by at most one.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

SHARD_KEYS = ("shard_index", "num_shards", "num_instances")


class Shard(BaseModel):
    """Which slice of a run one assessment evaluates (all of it when no shard is named)."""

    model_config = ConfigDict(extra="ignore")

    shard_index: int | None = Field(default=None, ge=0)
    num_shards: int | None = Field(default=None, ge=1)
    num_instances: int | None = Field(default=None, ge=1)

    @model_validator(mode="after")
    def _consistent(self) -> Shard:
        if self.shard_index is not None and self.count is None:
            raise ValueError("shard_index needs num_shards (or num_instances)")
        if self.shard_index is None and self.num_shards not in (None, 1):
            raise ValueError("num_shards needs shard_index")
        index, count = self.shard_index, self.count
        if index is not None and count is not None and index >= count:
            raise ValueError(f"shard_index must be below {count}, got {index}")
        return self

    @property
    def count(self) -> int | None:
        """How many shards the run has: ``num_shards``, else ``num_instances``."""
        return self.num_shards if self.num_shards is not None else self.num_instances

    def slice(self, query_ids: Sequence[str]) -> list[str]:
        """The queries of the run's sample this shard evaluates, in the sample's order."""
        if self.shard_index is None or self.count is None:
            return list(query_ids)
        return list(query_ids[self.shard_index :: self.count])

    def describe(self) -> dict[str, int] | None:
        """The shard for the report, or None for an unsharded run."""
        if self.shard_index is None or self.count is None:
            return None
        return {"shard_index": self.shard_index, "num_shards": self.count}


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
