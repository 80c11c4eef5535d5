"""A sharded assessment through the green agent's A2A server, as an AgentBeats leaderboard runs it.

Four shards of one request evaluate disjoint query sets whose union is the unsharded run's first
``num_instances`` queries (the run's total across its shards, as the leaderboard template sends
it), and every result carries the public evaluator's leaderboard keys, its vector search calls
counted on the MCP server named in the config.
"""

from __future__ import annotations

from typing import Any

import httpx
from a2a.helpers import get_data_parts

from harness.processes import ServerProcess
from tests.support.green import assess

SHARDS = 4
#: The run's task instances across its shards, of an 18-query sample.
INSTANCES = 14


def _qdrant_calls(base_url: str) -> int:
    return int(httpx.post(base_url + "/health_check", json={}).json()["qdrant_calls_total"])


async def _results(green: ServerProcess, request: dict[str, Any]) -> dict[str, Any]:
    events = await assess(green.base_url, request)
    (artifact,) = [e.artifact_update.artifact for e in events if e.HasField("artifact_update")]
    (data,) = get_data_parts(artifact.parts)
    return dict(data)


async def test_four_shards_are_disjoint_and_make_up_the_run(
    green_agent: ServerProcess, purple_agent: ServerProcess, mcp_server: Any
) -> None:
    config = {"num_queries": 18, "top_k": 5, "random_seed": 11}
    request = {"participants": {"retrieval_agent": purple_agent.base_url}, "config": config}
    shards, counted = [], []  # the shards first: their searches are not in the cache yet
    for index in range(SHARDS):
        sharded = {
            **request,
            "config": {**config, "mcp_server_url": mcp_server.mcp_url},  # /mcp form accepted
            "assessment_config": {
                "shard_index": index,
                "num_shards": SHARDS,
                "num_instances": INSTANCES,
            },
        }
        before = _qdrant_calls(mcp_server.base_url)
        shards.append(await _results(green_agent, sharded))
        counted.append(_qdrant_calls(mcp_server.base_url) - before)
    whole = await _results(green_agent, request)
    assert whole["shard"] is None and whole["total_queries"] == 18
    assert sum(counted) > 0
    first = [q["query_id"] for q in whole["queries"][:INSTANCES]]  # in the sample's order
    sets = [{q["query_id"] for q in s["queries"]} for s in shards]
    assert [len(s) for s in sets] == [4, 4, 3, 3]
    assert set.union(*sets) == set(first)
    assert sum(len(s) for s in sets) == len(set.union(*sets))  # disjoint
    for index, result in enumerate(shards):
        assert result["shard"] == {
            "shard_index": index,
            "num_shards": SHARDS,
            "num_instances": INSTANCES,
        }
        assert result["total_queries"] == result["successful_communications"] == len(sets[index])
        # What the MCP server counted during the shard (its result cache answers repeats).
        assert result["vector_search_calls_total"] == counted[index]
        for key in ("mean_ndcg_at_k", "mean_mrr_at_k", "mean_precision_at_k", "mean_recall_at_k"):
            assert result[key] == round(result[key], 2) and 0 <= result[key] <= 1
    # Same answers, same figures: the shards' NDCG sums add up to the whole run's over its first
    # INSTANCES queries.
    total = sum(r["sums"]["ndcg@5"] for r in shards)
    assert abs(total - sum(q["ndcg"]["ndcg@5"] for q in whole["queries"][:INSTANCES])) < 1e-9
