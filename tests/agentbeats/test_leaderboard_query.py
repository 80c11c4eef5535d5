"""The leaderboard's queries (agentbeats/queries.json) as agentbeats.dev runs them: over the one
table it builds from the results files, each file as the leaderboard template's workflows write
it (tests/support/leaderboard.py).

Every query reads the table ``results`` and nothing else, and its first column is ``id``, the
participant's AgentBeats id; a run without one is left out. "Every run" has a row per results
file: a run's shards merge from their counts and sums (never a mean of the shards' means), and a
run without the figures (failed, partial, or written by a green agent that sends no sums) shows
with its figures empty and its status, rather than failing the board. "Best full run per
participant" ranks each participant's best run of every NFCorpus test query.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import duckdb
import json5
import pytest

from harness.processes import REPO
from services.green_agent.assessment.leaderboard import leaderboard_keys
from services.green_agent.assessment.request import Shard
from services.green_agent.evaluation.dataset import sample_query_ids
from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.evaluation.report import build_report
from tests.support.leaderboard import board, queries, write_results_file

SCENARIO = json5.loads((REPO / "agentbeats/scenario.json5").read_text())
#: Every NFCorpus test query: the leaderboard's assessment.
FULL = SCENARIO["components"]["gateway"]["config"]["assessment_config"]["num_queries"]
EVERY, BEST = (q["name"] for q in queries())
GREEN = "green-id"
#: What a query may not call: DuckDB's file readers and globbing, or a file named as a table.
READS_FILES = re.compile(r"\b(read_\w+|glob|parquet_\w+)\s*\(|\bFROM\s+'", re.IGNORECASE)
#: The leaderboard query as it stood before: it read the files itself.
READS_ITSELF = """SELECT participants.retrieval_agent AS id, COUNT(*) AS "Shards"
FROM (SELECT participants, filename, UNNEST(results) AS r
      FROM read_json_auto('results/*.json', filename = true) WHERE status = 'completed')
GROUP BY filename, participants.retrieval_agent"""


def _ids(agent: str | None) -> dict[str, str]:
    """The scenario's agentbeats_ids as a submitter fills them in (None: the key left out)."""
    ids = {"nfcorpus_evaluator": GREEN, "retrieval_agent": agent}
    return {role: given for role, given in ids.items() if given is not None}


def _part(n: int, answered: int, ndcg5: float, ndcg10: float, mrr: float) -> dict[str, Any]:
    """The part of a shard's data part the queries read: its count and its metrics' sums."""
    sums = {"ndcg@5": ndcg5, "ndcg@10": ndcg10, "mrr": mrr}
    return {"num_queries": n, "answered": answered, "total_queries": n, "sums": sums}


def _done(*parts: dict[str, Any]) -> list[dict[str, Any]]:
    """Each part as a completed shard's final answer from the gateway."""
    return [{"status": "completed", "results": [part]} for part in parts]


FAILED = {"status": "failed", "results": []}


def _green_result(ids: list[str], shard: Shard) -> dict[str, Any]:
    """The green agent's data part for ``ids`` answered by a made-up agent, built as it builds it.

    Query ``i`` has judged documents ``D{i}-0..3``; the agent ranks ``i % 4`` unjudged ones
    first, so NDCG differs from query to query; every 7th query gets no reply.
    """
    qrels = {q: {f"D{q}-{j}": 2 - j % 2 for j in range(4)} for q in ids}
    outcomes = []
    for q in ids:
        index = int(q.removeprefix("Q"))
        ranked = [f"X{q}-{j}" for j in range(index % 4)] + [f"D{q}-{j}" for j in range(4)]
        if index % 7 == 0:
            outcomes.append(QueryOutcome(q, 0.5, reason="timeout", error="no reply"))
        else:
            outcomes.append(QueryOutcome(q, 0.1, ranked[:5], loose_doc_ids=ranked[:5]))
    report = build_report(
        outcomes, qrels, agent="http://agent/", protocol="1.0", top_k=5, seed=42, wall_s=1.0
    )
    keys = leaderboard_keys(outcomes, qrels, 5, 1.0, None)
    return {**keys, **report.model_dump(mode="json"), "shard": shard.describe()}


def test_every_query_reads_only_the_table_and_puts_the_participants_id_first(
    tmp_path: Path,
) -> None:
    write_results_file(tmp_path, "a", _done(_part(2, 2, 1.0, 1.0, 1.0)), _ids("agent-a"))
    write_results_file(tmp_path, "b", [FAILED], _ids("agent-b"))
    named = queries()
    assert [sorted(q) for q in named] == [["name", "query"]] * 2
    for query in named:
        assert not READS_FILES.search(query["query"]), query["name"]
    answers = board(tmp_path)  # every query run where no file can be read
    assert list(answers) == [EVERY, BEST]
    for name, table in answers.items():
        assert table.columns[0] == "id", name
    assert answers[EVERY].columns == [
        "id",
        "NDCG@5",
        "NDCG@10",
        "MRR",
        "Answered",
        "Queries",
        "Shards",
        "Status",
    ]
    assert answers[BEST].columns == [
        "id",
        "NDCG@5",
        "NDCG@10",
        "MRR",
        "Answered",
        "Queries",
        "Runs",
    ]


def test_a_query_that_reads_files_itself_is_caught(tmp_path: Path) -> None:
    write_results_file(tmp_path, "a", _done(_part(2, 2, 1.0, 1.0, 1.0)), _ids("agent-a"))
    assert READS_FILES.search(READS_ITSELF)
    assert READS_FILES.search("SELECT * FROM 'results/a.json'")
    assert READS_FILES.search("SELECT file AS id FROM glob('results/*')")
    with pytest.raises(duckdb.PermissionException):
        board(tmp_path, [{"name": "reads files", "query": READS_ITSELF}])
    # The same files, read as the app reads them, hold the run.
    table = board(tmp_path, [{"name": "table", "query": "SELECT count(*) FROM results"}])
    assert table["table"].rows == [(1,)]


def test_shards_of_unequal_size_merge_by_counts_and_sums(tmp_path: Path) -> None:
    # 3 queries at NDCG@5 0.5 and 1 query at 0: the run's mean is 0.375; a mean of the two
    # shards' means would say 0.25.
    shards = _done(_part(3, 3, 1.5, 1.8, 2.0), _part(1, 0, 0, 0, 0))
    write_results_file(tmp_path, "a", shards, _ids("agent-a"))
    write_results_file(tmp_path, "b", _done(_part(2, 2, 1.0, 1.0, 1.0)), _ids("agent-b"))
    assert board(tmp_path)[EVERY].rows == [
        ("agent-b", 0.5, 0.5, 0.5, 2, 2, 1, "completed"),
        ("agent-a", 0.375, 0.45, 0.5, 3, 4, 2, "completed"),
    ]


def test_four_shards_read_as_the_unsharded_run(tmp_path: Path) -> None:
    # Every test query's result as the green agent writes it, in 4 shards and in one.
    sample = sample_query_ids([f"Q{i}" for i in range(FULL)], FULL, seed=42)
    whole = _green_result(sample, Shard())
    shards = [Shard(shard_index=i, num_shards=4) for i in range(4)]
    parts = [_green_result(shard.slice(sample), shard) for shard in shards]
    write_results_file(tmp_path / "sharded", "run", _done(*parts), _ids("agent"))
    write_results_file(tmp_path / "unsharded", "run", _done(whole), _ids("agent"))
    sharded, unsharded = board(tmp_path / "sharded"), board(tmp_path / "unsharded")
    m = whole["metrics"]
    figures = ("agent", *(round(m[k], 4) for k in ("ndcg@5", "ndcg@10", "mrr")))
    counts = (whole["answered"], FULL)
    assert whole["answered"] < FULL  # some queries got no reply: Answered is not Queries
    assert sharded[EVERY].rows == [(*figures, *counts, 4, "completed")]
    assert unsharded[EVERY].rows == [(*figures, *counts, 1, "completed")]
    assert sharded[BEST].rows == unsharded[BEST].rows == [(*figures, *counts, 1)]


def test_a_run_that_did_not_complete_shows_with_empty_figures(tmp_path: Path) -> None:
    # The template's summary: partial when some shard completed, failed when none did; a failed
    # shard's answer has no results.
    partial = [*_done(_part(2, 2, 2.0, 2.0, 2.0)), FAILED]
    write_results_file(tmp_path, "a", _done(_part(2, 2, 1.0, 1.0, 1.0)), _ids("agent-a"))
    write_results_file(tmp_path, "b", partial, _ids("agent-b"))
    write_results_file(tmp_path, "c", [FAILED, FAILED], _ids("agent-c"))
    answers = board(tmp_path)
    assert answers[EVERY].rows == [
        ("agent-a", 0.5, 0.5, 0.5, 2, 2, 1, "completed"),
        ("agent-b", None, None, None, None, None, 1, "partial"),
        ("agent-c", None, None, None, None, None, 0, "failed"),
    ]
    assert answers[BEST].rows == []  # agent-a's run is not of every test query


def test_a_board_of_failed_runs_only_still_answers(tmp_path: Path) -> None:
    write_results_file(tmp_path, "c", [FAILED], _ids("agent-c"))
    answers = board(tmp_path)
    assert answers[EVERY].rows == [("agent-c", None, None, None, None, None, 0, "failed")]
    assert answers[BEST].rows == []


# The data part of a green agent that sends the public NFCorpus evaluator's keys and no sums.
OLDER = {
    "mean_ndcg_at_k": 0.41,
    "mean_mrr_at_k": 0.52,
    "mean_precision_at_k": 0.3,
    "mean_recall_at_k": 0.12,
    "execution_time_seconds": 80.5,
    "total_queries": 50,
    "successful_communications": 50,
    "vector_search_calls_total": 50,
}


def test_a_file_from_a_green_agent_without_sums_shows_with_empty_figures(tmp_path: Path) -> None:
    write_results_file(tmp_path, "old", _done(OLDER), _ids("agent-old"))
    # Alone, no file holds sums: the table has no such column, and the queries still answer.
    alone = board(tmp_path)
    assert alone[EVERY].rows == [("agent-old", None, None, None, None, None, 1, "no sums")]
    assert alone[BEST].rows == []
    write_results_file(tmp_path, "new", _done(_part(2, 2, 1.0, 1.0, 1.0)), _ids("agent-new"))
    # A run whose shards are half old, half new cannot be merged either.
    mixed = _done(_part(2, 2, 1.0, 1.0, 1.0), OLDER)
    write_results_file(tmp_path, "mixed", mixed, _ids("agent-mixed"))
    assert board(tmp_path)[EVERY].rows == [
        ("agent-new", 0.5, 0.5, 0.5, 2, 2, 1, "completed"),
        ("agent-mixed", None, None, None, None, None, 2, "no sums"),
        ("agent-old", None, None, None, None, None, 1, "no sums"),
    ]


@pytest.mark.parametrize("agent", ["", "  ", None], ids=["empty", "blank", "missing"])
def test_a_run_without_the_participants_id_is_left_out(tmp_path: Path, agent: str | None) -> None:
    # The template's scenario leaves the participant's id for the submitter to fill in.
    write_results_file(tmp_path, "a", _done(_part(2, 2, 1.0, 1.0, 1.0)), _ids("agent-a"))
    write_results_file(tmp_path, "x", _done(_part(2, 2, 2.0, 2.0, 2.0)), _ids(agent))
    answers = board(tmp_path)
    assert [row[0] for row in answers[EVERY].rows] == ["agent-a"]


def _full(ndcg5: float, *, shards: int = 1) -> list[dict[str, Any]]:
    """A completed run of every test query at mean NDCG@5 ``ndcg5`` (and @10, MRR beside it)."""
    sizes = [FULL // shards + (i < FULL % shards) for i in range(shards)]
    return _done(*(_part(n, n, ndcg5 * n, (ndcg5 + 0.05) * n, (ndcg5 + 0.1) * n) for n in sizes))


def test_the_best_full_run_of_each_participant(tmp_path: Path) -> None:
    write_results_file(tmp_path, "a1", _full(0.5), _ids("agent-a"))
    write_results_file(tmp_path, "a2", _full(0.6, shards=4), _ids("agent-a"))
    # A cut run (num_instances) of 100 queries is not ranked beside full runs, however good.
    write_results_file(tmp_path, "a3", _done(_part(100, 100, 90.0, 90.0, 90.0)), _ids("agent-a"))
    write_results_file(tmp_path, "a4", [FAILED], _ids("agent-a"))
    write_results_file(tmp_path, "b1", _full(0.55), _ids("agent-b"))
    write_results_file(tmp_path, "c1", [*_full(0.7), FAILED], _ids("agent-c"))  # partial
    answers = board(tmp_path)
    assert answers[BEST].rows == [
        ("agent-a", 0.6, 0.65, 0.7, FULL, FULL, 2),
        ("agent-b", 0.55, 0.6, 0.65, FULL, FULL, 1),
    ]
    # Each best row is that run's row of "Every run".
    every = {(r["id"], r["NDCG@5"]): r for r in answers[EVERY].records()}
    for best in answers[BEST].records():
        row = every[(best["id"], best["NDCG@5"])]
        assert {k: row[k] for k in best if k != "Runs"} == {k: best[k] for k in best if k != "Runs"}
    assert [r["Queries"] for r in answers[EVERY].records()][:1] == [100]  # listed, ranked first
