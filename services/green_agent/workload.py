"""What a load run asks, and how much of it the MCP server's result cache answered.

A load that repeats the 323 test queries measures the result cache, not the service: after the
first round every answer is a cache hit and no query is encoded or searched. The load therefore
draws from every NFCorpus query (train, dev and test: 3,237 ids, 3,216 distinct texts) in a
seeded order, repeats only once the pool is used up, and says how many it repeated; when the MCP
server's metrics are reachable, it reads the server's cache lookups before and after the run and
reports the hit ratio the run caused.
"""

from __future__ import annotations

import random
import re
from pathlib import Path
from typing import Literal

import httpx
from pydantic import BaseModel

from services.green_agent.compat import server_base
from services.nfcorpus.dataset import load_queries

QueryPool = Literal["all", "test"]
_LOOKUP = re.compile(r'^mcp_result_cache_lookups_total\{result="(hit|miss)"\} (\S+)$', re.M)


class CacheEffect(BaseModel):
    """The MCP server's result-cache lookups during one run (all its clients counted)."""

    lookups: int
    hits: int
    hit_ratio: float | None  # None when nothing was looked up (cache off)


def query_pool(
    data_dir: Path, pool: QueryPool, test_queries: dict[str, str], seed: int
) -> list[tuple[str, str]]:
    """(id, text) of every distinct query text of ``pool``, in a seeded order."""
    queries = load_queries(data_dir) if pool == "all" else test_queries
    by_text: dict[str, str] = {}
    for query_id in sorted(queries):  # the first id of a text that several ids share
        by_text.setdefault(queries[query_id], query_id)
    distinct = sorted((query_id, text) for text, query_id in by_text.items())
    random.Random(seed).shuffle(distinct)
    return distinct


async def cache_lookups(mcp_url: str | None) -> dict[str, float] | None:
    """The server's cache lookups by result now; None when unnamed or unreachable."""
    if not mcp_url:
        return None
    try:
        async with httpx.AsyncClient(timeout=10) as client:
            answer = await client.get(server_base(mcp_url) + "/metrics")
            answer.raise_for_status()
    except httpx.HTTPError:
        return None
    found = {result: float(value) for result, value in _LOOKUP.findall(answer.text)}
    return found if found else None


def cache_effect(
    before: dict[str, float] | None, after: dict[str, float] | None
) -> CacheEffect | None:
    """The lookups between two readings (None when either is missing)."""
    if before is None or after is None:
        return None
    hits = int(after.get("hit", 0) - before.get("hit", 0))
    lookups = hits + int(after.get("miss", 0) - before.get("miss", 0))
    return CacheEffect(lookups=lookups, hits=hits, hit_ratio=hits / lookups if lookups else None)
