"""The NFCorpus leaderboard as agentbeats.dev builds it: results files as the leaderboard
template's workflows write them, and the queries of agentbeats/queries.json run as the app runs
them.

The app makes one DuckDB table, ``results``, from every ``results/*.json`` of the leaderboard
repository, one row per file (:data:`APP_TABLE`, as published leaderboards test their queries),
then runs each query pasted on the green agent's page against that table; the first column must
be ``id``, and a query that reads files itself fails there. :func:`board` makes the table so from
``folder/results``, then takes the file system away from the connection (DuckDB's
``enable_external_access``, which cannot be turned back on) before it runs a query: one that
reads files fails here too.

:func:`write_results_file` writes a run's file as the template's summary job does
(RDI-Foundation/agentbeats-leaderboard-template at 69d6115, ``.github/workflows/run-scenario.yml``
and ``quick-submit-runner.yml``, step "Aggregate results"): ``jq -s`` over each shard's
``results.json``, the gateway's final answer ``{"status", "results"}``, gives ``{status:
"completed" when every shard completed, "partial" when some did, else "failed"; participants:
the scenario's metadata.agentbeats_ids ({role: AgentBeats id}); results: every shard's results,
in shard order}``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb

from harness.processes import REPO

QUERIES = REPO / "agentbeats/queries.json"
#: How the app builds its table, run in the leaderboard repository's root.
APP_TABLE = "CREATE TABLE results AS SELECT * FROM read_json('results/*.json')"


def queries() -> list[dict[str, str]]:
    """The queries a host pastes on the green agent's page: ``[{"name", "query"}]``."""
    loaded: list[dict[str, str]] = json.loads(QUERIES.read_text())
    return loaded


def run_status(answers: Sequence[Mapping[str, Any]]) -> str:
    """The run's status from its shards' final answers, as the template's summary says it."""
    done = [answer["status"] == "completed" for answer in answers]
    return "completed" if all(done) else "partial" if any(done) else "failed"


def write_results_file(
    folder: Path,
    name: str,
    answers: Sequence[Mapping[str, Any]],
    participants: Mapping[str, str],
) -> Path:
    """Write ``folder/results/<name>.json`` from the shards' final answers, as the template does."""
    run = {
        "status": run_status(answers),
        "participants": dict(participants),
        "results": [part for answer in answers for part in answer["results"]],
    }
    results = folder / "results"
    results.mkdir(parents=True, exist_ok=True)
    path = results / f"{name}.json"
    path.write_text(json.dumps(run, indent=2))
    return path


@dataclass(frozen=True)
class Table:
    """What one query answered: its columns and rows."""

    columns: list[str]
    rows: list[tuple[Any, ...]]

    def records(self) -> list[dict[str, Any]]:
        """Each row as ``{column: value}``."""
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


def board(folder: Path, named: Sequence[Mapping[str, str]] | None = None) -> dict[str, Table]:
    """Each query's answer (agentbeats/queries.json unless ``named``), by name, over
    ``folder/results/*.json`` as the app reads them."""
    answers: dict[str, Table] = {}
    with duckdb.connect() as db:
        db.execute(f"SET file_search_path = '{folder}'")
        db.execute(APP_TABLE)
        db.execute("SET enable_external_access = false")
        for query in named if named is not None else queries():
            result = db.sql(query["query"])
            columns = [column[0] for column in result.description]
            answers[query["name"]] = Table(columns, result.fetchall())
    return answers
