"""The leaderboard workflow's own steps (agentbeats/run-scenario.yml), run with bash and jq.

The steps that need no runner, no Docker and no network run here as the workflow holds them
(tests/support/workflow.py): the export of repository secrets as Amber's ``AMBER_CONFIG_*``
variables, the merge of the shards' answers into the run's results file, and the check and merge
of the shards' provenance, on made-up shards. The results file must also be what the board's
tests write from the same answers (``tests/support/leaderboard.py``'s ``write_results_file``
mirrors this merge for the leaderboard's queries).
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import json5
import pytest

from harness.processes import REPO
from tests.support.amber import root_config
from tests.support.leaderboard import write_results_file
from tests.support.workflow import StepRun, run_step

WORKFLOW = REPO / "agentbeats/run-scenario.yml"
#: The AgentBeats ids a submitter fills into the scenario's metadata.
IDS = {"nfcorpus_evaluator": "green-under-test", "retrieval_agent": "agent-under-test"}
SCENARIO = json5.loads((REPO / "agentbeats/scenario.json5").read_text())


@pytest.fixture(autouse=True)
def _jq() -> None:
    # The workflow's steps are bash and jq; both are on GitHub's runners and on this project's
    # machines (Debian's jq).
    if shutil.which("jq") is None:
        pytest.fail("jq is missing: run `make tools-jq` (Debian)", pytrace=False)


def _data(shard: int, of: int) -> dict[str, Any]:
    """A green agent's data part for one shard (the fields do not matter to the merge)."""
    return {"shard": {"shard_index": shard, "num_shards": of}, "num_queries": 10, "answered": 10}


def _completed(shard: int, of: int) -> dict[str, Any]:
    return {"status": "completed", "results": [_data(shard, of)]}


def _shards(root: Path, answers: dict[int, dict[str, Any]], file: str = "results.json") -> None:
    """What the eval jobs leave in the summary's download folder: shard-<i>/<file>."""
    for index, answer in answers.items():
        folder = root / "shard-artifacts" / f"shard-{index}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / file).write_text(json.dumps(answer, indent=2))


def _scenario_json(root: Path, scenario: dict[str, Any]) -> Path:
    path = root / "scenario.json"
    path.write_text(json.dumps(scenario))
    return path


def _merge(root: Path, num_shards: int, scenario: dict[str, Any] | None = None) -> StepRun:
    path = _scenario_json(root, scenario or SCENARIO)
    env = {"NUM_SHARDS": str(num_shards), "SCENARIO_JSON": str(path)}
    return run_step(WORKFLOW, "summary", "Aggregate results", root, env)


# --- the repository's secrets as Amber's variables ---------------------------------------------

SECRETS = {
    "github_token": "ghs_not-for-amber",  # as the secrets context spells the workflow's token
    "RETRIEVAL_AGENT_API_KEY": "sk-participant \n",
    "JUDGE__TOKEN": "line one\nline two",
    "UNRELATED_DEPLOY_KEY": "kept-back",
}


def _export(root: Path, scenario: dict[str, Any], secrets: dict[str, str]) -> StepRun:
    # The step reads scenario.json5 after the shard's patch turned it into JSON.
    (root / "scenario.json5").write_text(json.dumps(scenario))
    env = {"SECRETS_JSON": json.dumps(secrets)}
    return run_step(WORKFLOW, "eval", "Export AMBER_CONFIG vars", root, env)


def test_only_secrets_named_by_the_scenarios_config_keys_are_exported(tmp_path: Path) -> None:
    scenario = {
        **SCENARIO,
        "config_schema": {
            "type": "object",
            "properties": {
                "github_token": {"type": "string"},  # never the workflow's own token
                "retrieval_agent_api_key": {"type": "string", "secret": True},
                "judge": {"type": "object", "properties": {"token": {"type": "string"}}},
                "optional_key": {"type": "string"},
            },
            "additionalProperties": False,
        },
    }
    run = _export(tmp_path, scenario, SECRETS)
    assert run.process.returncode == 0, run.output
    # Trailing whitespace trimmed as the template trims it; a value of several lines kept whole.
    assert run.github_env == {
        "AMBER_CONFIG_RETRIEVAL_AGENT_API_KEY": "sk-participant",
        "AMBER_CONFIG_JUDGE__TOKEN": "line one\nline two",
    }
    # The log names each config key and where its value comes from, never a value.
    assert run.process.stdout.splitlines() == [
        "config.github_token: no secret GITHUB_TOKEN",
        "config.retrieval_agent_api_key: AMBER_CONFIG_RETRIEVAL_AGENT_API_KEY, from the secret "
        "RETRIEVAL_AGENT_API_KEY",
        "config.judge.token: AMBER_CONFIG_JUDGE__TOKEN, from the secret JUDGE__TOKEN",
        "config.optional_key: no secret OPTIONAL_KEY",
    ]
    assert not any(v.strip() in run.output for v in SECRETS.values())
    # What Amber builds from them fits the scenario's schema (it refuses a variable that names
    # no key of it, which is why the others stay behind).
    assert root_config(scenario["config_schema"], run.github_env) == {
        "retrieval_agent_api_key": "sk-participant",
        "judge": {"token": "line one\nline two"},
    }


def test_the_scenario_as_it_stands_takes_no_secret(tmp_path: Path) -> None:
    run = _export(tmp_path, SCENARIO, SECRETS)
    assert run.process.returncode == 0, run.output
    assert run.github_env == {}
    assert root_config(SCENARIO["config_schema"], run.github_env) == {}


# --- the shards' answers as one results file ----------------------------------------------------


@pytest.mark.parametrize(
    ("statuses", "status"),
    [
        (["completed"] * 4, "completed"),
        (["completed", "failed", "completed", "completed"], "partial"),
        (["failed", "canceled", "rejected", "failed"], "failed"),
    ],
)
def test_the_run_is_completed_partial_or_failed(
    tmp_path: Path, statuses: list[str], status: str
) -> None:
    answers = {
        i: _completed(i, 4) if s == "completed" else {"status": s, "results": []}
        for i, s in enumerate(statuses)
    }
    _shards(tmp_path, answers)
    run = _merge(tmp_path, 4)
    assert run.process.returncode == 0, run.output
    merged = json.loads((tmp_path / "results.json").read_text())
    assert merged["status"] == status
    assert run.outputs == {"status": status}
    assert merged["results"] == [_data(i, 4) for i, s in enumerate(statuses) if s == "completed"]
    assert f"### Results: {status}" in run.summary
    for i, s in enumerate(statuses):
        assert f"| {i} | {s} |" in run.summary
    assert ("a leaderboard counts completed runs only" in run.output) == (status != "completed")


def test_the_results_file_holds_the_template_keys_and_the_scenarios_ids(tmp_path: Path) -> None:
    _shards(tmp_path, {0: _completed(0, 1)})
    ids = {"nfcorpus_evaluator": "green-id", "retrieval_agent": "agent-id"}
    scenario = {**SCENARIO, "metadata": {"agentbeats_ids": ids}}
    run = _merge(tmp_path, 1, scenario)
    assert run.process.returncode == 0, run.output
    merged = json.loads((tmp_path / "results.json").read_text())
    assert merged == {"status": "completed", "participants": ids, "results": [_data(0, 1)]}


def test_shards_merge_in_index_order_past_nine(tmp_path: Path) -> None:
    # shard-10 sorts before shard-2 by name; the run's results are in shard order.
    _shards(tmp_path, {i: _completed(i, 12) for i in range(12)})
    run = _merge(tmp_path, 12)
    assert run.process.returncode == 0, run.output
    merged = json.loads((tmp_path / "results.json").read_text())
    assert [r["shard"]["shard_index"] for r in merged["results"]] == list(range(12))


def test_a_shard_with_no_answer_or_no_results_counts_as_failed(tmp_path: Path) -> None:
    # Shard 1 timed out (no file); shard 2's gateway never saw its agents ready, and answers so.
    _shards(tmp_path, {0: _completed(0, 3), 2: {"status": "failed", "error": "Timeout"}})
    run = _merge(tmp_path, 3)
    assert run.process.returncode == 0, run.output
    merged = json.loads((tmp_path / "results.json").read_text())
    assert merged["status"] == "partial"
    assert merged["results"] == [_data(0, 3)]
    assert "shard 1 left no results: counted as failed" in run.output
    assert "| 1 | failed | 0 |" in run.summary and "| 2 | failed | 0 |" in run.summary


def test_the_merge_is_what_the_gateway_runs_test_writes(tmp_path: Path) -> None:
    # tests/agentbeats/test_gateway_run.py and test_leaderboard_query.py read the board over
    # files written by write_results_file: they must be this step's, for the same answers and
    # the ids a submitter fills in.
    answers = [_completed(0, 3), {"status": "failed", "results": []}, _completed(2, 3)]
    _shards(tmp_path, dict(enumerate(answers)))
    filled = {**SCENARIO, "metadata": {"agentbeats_ids": IDS}}
    run = _merge(tmp_path, 3, filled)
    assert run.process.returncode == 0, run.output
    written = write_results_file(tmp_path / "mirror", "mirror", answers, IDS)
    assert json.loads((tmp_path / "results.json").read_text()) == json.loads(written.read_text())


# --- the shards' provenance ---------------------------------------------------------------------


def _provenance(shard: int, **changes: Any) -> dict[str, Any]:
    """One shard's provenance.json as the eval job writes it."""
    provenance: dict[str, Any] = {
        "image_digests": {
            "/gateway": "ghcr.io/rdi-foundation/agentbeats-gateway@sha256:" + "1" * 64,
            "/nfcorpus_evaluator": "ghcr.io/nfcorpus-retrieval/nfcorpus-retrieval@sha256:"
            + "2" * 64,
            "/retrieval_agent": "ghcr.io/nfcorpus-retrieval/nfcorpus-retrieval@sha256:" + "2" * 64,
        },
        "manifest_digests": {
            # The scenario's own manifest holds the shard's shard_index: it differs by shard.
            "/": f"sha256:root-of-shard-{shard}=",
            "/gateway": "sha256:gateway=",
            "/nfcorpus_evaluator": "sha256:green=",
            "/retrieval_agent": "sha256:agent=",
        },
        "timestamp": f"2026-11-27T10:00:0{shard}Z",
        "github_actions": {
            "run_url": "https://github.com/someone/nfcorpus-leaderboard/actions/runs/42",
            "ref": "refs/heads/submit",
            "sha": "a" * 40,
            "repository_url": "https://github.com/someone/nfcorpus-leaderboard",
            "workflow_ref": "someone/nfcorpus-leaderboard/.github/workflows/run-scenario.yml"
            "@refs/heads/submit",
            "workflow_sha": "a" * 40,
        },
    }
    for key, value in changes.items():
        provenance[key] = {**provenance[key], **value}
    return provenance


def _check_provenance(root: Path, num_shards: int) -> StepRun:
    return run_step(
        WORKFLOW, "summary", "Validate and merge provenance", root, {"NUM_SHARDS": str(num_shards)}
    )


def test_the_shards_provenance_merges_into_the_first_shards(tmp_path: Path) -> None:
    _shards(tmp_path, {i: _provenance(i) for i in range(3)}, "provenance.json")
    run = _check_provenance(tmp_path, 3)
    assert run.process.returncode == 0, run.output
    merged = json.loads((tmp_path / "provenance.json").read_text())
    assert merged == _provenance(0)
    assert list(merged) == ["image_digests", "manifest_digests", "timestamp", "github_actions"]


@pytest.mark.parametrize(
    "changes",
    [
        {"image_digests": {"/retrieval_agent": "ghcr.io/someone/agent@sha256:" + "3" * 64}},
        {"manifest_digests": {"/retrieval_agent": "sha256:another-agent="}},
        {"github_actions": {"run_url": "https://github.com/someone/x/actions/runs/43"}},
    ],
    ids=["image", "manifest", "run"],
)
def test_shards_that_ran_different_things_stop_the_submission(
    tmp_path: Path, changes: dict[str, Any]
) -> None:
    _shards(tmp_path, {0: _provenance(0), 1: _provenance(1, **changes)}, "provenance.json")
    run = _check_provenance(tmp_path, 2)
    assert run.process.returncode != 0
    assert "ran different things" in run.output
    changed = next(iter(next(iter(changes.values()))))
    assert changed in run.output  # the diff names what differs
    assert not (tmp_path / "provenance.json").exists()


def test_a_shard_without_provenance_is_named_and_none_stops_the_run(tmp_path: Path) -> None:
    _shards(tmp_path, {1: _provenance(1)}, "provenance.json")
    run = _check_provenance(tmp_path, 2)
    assert run.process.returncode == 0, run.output
    assert "shard 0 left no provenance" in run.output
    assert json.loads((tmp_path / "provenance.json").read_text()) == _provenance(1)

    empty = tmp_path / "empty"
    empty.mkdir()
    run = _check_provenance(empty, 2)
    assert run.process.returncode != 0
    assert "no shard left provenance: nothing ran" in run.output
