"""The leaderboard's DuckDB query (agentbeats/leaderboard.sql) over results files as the
leaderboard workflow writes them: one row per completed run, shards merged from their counts
and sums (never a mean of means), the participant's AgentBeats id first."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import duckdb
import pytest

from harness.processes import REPO

QUERY = (REPO / "agentbeats/leaderboard.sql").read_text()


def _shard(n: int, answered: int, ndcg5: float, ndcg10: float, mrr: float) -> dict[str, Any]:
    """A shard's data part: what the query reads of it (sums over its ``n`` queries)."""
    sums = {"ndcg@5": ndcg5, "ndcg@10": ndcg10, "mrr": mrr}
    return {"num_queries": n, "answered": answered, "sums": sums, "total_queries": n}


def _run(folder: Path, name: str, status: str, agent: str, shards: list[dict[str, Any]]) -> None:
    results = folder / "results"
    results.mkdir(exist_ok=True)
    participants = {"nfcorpus_evaluator": "green-1", "retrieval_agent": agent}
    run = {"status": status, "participants": participants, "results": shards}
    (results / f"{name}.json").write_text(json.dumps(run))


def _leaderboard(folder: Path) -> list[tuple[Any, ...]]:
    with duckdb.connect() as db:
        db.execute(f"SET file_search_path = '{folder}'")
        return db.sql(QUERY).fetchall()


def test_shards_of_unequal_size_merge_by_counts_and_sums(tmp_path: Path) -> None:
    # 3 queries at NDCG@5 0.5 and 1 query at 0: the run's mean is 0.375; a mean of the two
    # shards' means would say 0.25.
    _run(
        tmp_path, "a", "completed", "agent-a", [_shard(3, 3, 1.5, 1.8, 2.0), _shard(1, 0, 0, 0, 0)]
    )
    _run(tmp_path, "b", "completed", "agent-b", [_shard(2, 2, 1.0, 1.0, 1.0)])
    rows = _leaderboard(tmp_path)
    assert rows == [
        ("agent-b", 0.5, 0.5, 0.5, 2, 2, 1),
        ("agent-a", 0.375, 0.45, 0.5, 3, 4, 2),
    ]


def test_a_run_that_did_not_complete_is_left_out(tmp_path: Path) -> None:
    _run(tmp_path, "a", "completed", "agent-a", [_shard(2, 2, 1.0, 1.0, 1.0)])
    _run(tmp_path, "b", "partial", "agent-b", [_shard(2, 2, 2.0, 2.0, 2.0)])
    assert [row[0] for row in _leaderboard(tmp_path)] == ["agent-a"]


def test_results_without_the_sums_are_refused(tmp_path: Path) -> None:
    # A green agent that sends only means cannot be merged: the query fails, it does not guess.
    _run(tmp_path, "a", "completed", "agent-a", [{"num_queries": 2, "mean_ndcg_at_k": 0.5}])
    with pytest.raises(duckdb.Error, match="sums"):
        _leaderboard(tmp_path)
