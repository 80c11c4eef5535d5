"""The green agent's CLI and A2A server against the purple agent and the real MCP server.

Every process is real (``python -m ...``) and talks over loopback HTTP.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import uuid
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2a.helpers import get_data_parts, get_text_parts
from a2a.types import TaskState

from harness.processes import REPO, ServerProcess
from services.green_agent.evaluation.dataset import load_test_set
from services.nfcorpus.dataset import DEFAULT_DATA_DIR
from services.nfcorpus.measures import ndcg_at_k
from services.purple_agent.ranking_policy import ServerOrder
from services.purple_agent.search.backend import read_answer
from services.purple_agent.settings import PurpleSettings
from tests.conformance import wire
from tests.support.green import CLI_TIMEOUT_S, assess, run_green
from tests.support.polling import wait_for
from tests.support.ports import closed_url


def test_eval_matches_the_mcp_server_called_directly(
    purple_agent: ServerProcess, mcp_server: Any, tmp_path: Path
) -> None:
    out = tmp_path / "report.json"
    args = [
        "--agent",
        purple_agent.base_url,
        "--num-queries",
        "40",
        "--top-k",
        "10",
        "--seed",
        "42",
    ]
    run = run_green("eval", *args, "--out", str(out))
    assert run.returncode == 0, run.stdout + run.stderr + purple_agent.log()
    report = json.loads(out.read_text())
    assert (report["num_queries"], report["answered"], report["failed"]) == (40, 40, 0)
    assert "ndcg@10" in run.stdout  # the human-readable table

    # The same retrieval without A2A: the MCP server's REST twin, asked for the same candidates,
    # read and cut as the agent does.
    test_set = load_test_set(DEFAULT_DATA_DIR)
    policy = ServerOrder(PurpleSettings().candidates)
    direct: dict[str, list[str]] = {}
    with httpx.Client(base_url=mcp_server.base_url, timeout=30) as http:
        for q in report["queries"]:
            body = {"query": test_set.queries[q["query_id"]], "top_k": policy.candidates(10)}
            answer = http.post("/search_nfcorpus", json=body).raise_for_status().json()
            direct[q["query_id"]] = policy.rank("", read_answer(answer).candidates, 10)
    assert {q["query_id"]: q["doc_ids"] for q in report["queries"]} == direct
    for k in (5, 10):
        scores = [ndcg_at_k(ids, test_set.qrels[q], k) for q, ids in direct.items()]
        assert report["metrics"][f"ndcg@{k}"] == pytest.approx(sum(scores) / len(scores), abs=1e-12)
    assert report["latency"]["p50_s"] > 0 and report["throughput_qps"] > 0


def test_eval_over_0_3_meets_the_contract(purple_agent: ServerProcess, tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    args = ["--agent", purple_agent.base_url, "--num-queries", "30", "--protocol", "0.3"]
    run = run_green("eval", *args, "--seed", "7", "--out", str(out))
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(out.read_text())
    assert (report["protocol"], report["answered"], report["failed"]) == ("0.3", 30, 0)


def test_eval_against_nothing_fails_with_a_clear_error(tmp_path: Path) -> None:
    with closed_url("") as nobody:
        run = run_green("eval", "--agent", nobody, "--num-queries", "1")
    assert run.returncode == 2
    assert run.stderr.startswith("error: ")


def test_rest_scores_the_mcp_server_on_whole_splits(mcp_server: Any, tmp_path: Path) -> None:
    out = tmp_path / "rest.json"
    args = ["--url", mcp_server.base_url, "--splits", "test", "--concurrency", "4"]
    run = run_green("rest", *args, "--out", str(out))
    assert run.returncode == 0, run.stdout + run.stderr
    (split,) = json.loads(out.read_text())["splits"].items()
    assert split[0] == "test" and split[1]["queries"] == 323
    assert 0.0 < split[1]["ndcg@10"] <= 1.0 and split[1]["latency_p50_ms"] > 0
    assert "NDCG@10" in run.stdout
    refused = run_green("rest", "--url", mcp_server.base_url, "--splits", "dev,tests")
    assert refused.returncode == 2 and "unknown split 'tests'" in refused.stderr


@pytest.mark.parametrize("pace", [["--concurrency", "4"], ["--rate", "20"]])
def test_load_runs_for_its_duration_and_reports(
    purple_agent: ServerProcess, mcp_server: Any, tmp_path: Path, pace: list[str]
) -> None:
    out = tmp_path / "load.json"
    args = ["--agent", purple_agent.base_url, *pace, "--duration", "1.5", "--out", str(out)]
    args += ["--mcp-url", mcp_server.mcp_url]
    run = run_green("load", *args)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(out.read_text())
    assert report["errors"] == 0 and report["dropped"] == 0, report["error_samples"]
    assert report["ok"] == report["requests"] > 0
    assert report["wall_s"] >= 1.5  # ran its duration, then ended by itself (the run returned)
    if "--rate" in pace:
        assert abs(report["requests"] - 30) <= 1
    assert report["latency"]["p99_s"] >= report["latency"]["p50_s"] > 0
    # Every NFCorpus query is in the pool: a short run repeats none, and the cache answers few.
    assert report["query_pool"] == "all" and report["pool_size"] > 3000
    assert report["repeats"] == 0 and report["distinct_queries"] == report["requests"]
    cache = report["result_cache"]
    assert cache["lookups"] >= report["requests"] and cache["hits"] <= cache["lookups"]


def test_load_from_three_workers_gives_one_report_of_their_sums(
    purple_agent: ServerProcess, mcp_server: Any, tmp_path: Path
) -> None:
    # An open-loop rate split across 3 generator processes: each starts its third, the merged
    # report adds their counts and reads its percentiles from their merged histograms.
    out, html = tmp_path / "load.json", tmp_path / "load.html"
    args = ["--agent", purple_agent.base_url, "--rate", "24", "--duration", "2.5"]
    args += ["--workers", "3", "--out", str(out), "--html", str(html)]
    run = run_green("load", *args, "--mcp-url", mcp_server.mcp_url)
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(out.read_text())
    workers = report["workers"]
    assert [w["worker"] for w in workers] == [0, 1, 2]
    assert report["requests"] == sum(w["requests"] for w in workers) > 0
    assert report["ok"] == sum(w["ok"] for w in workers) == report["latencies"]["count"]
    assert report["errors"] == 0 and report["dropped"] == 0, report["error_samples"]
    assert report["target_rate"] == 24 and all(w["asked_rate"] == 8 for w in workers)
    # The rate was achieved (every worker started its share: nothing flagged).
    assert report["requests"] >= 0.95 * 24 * 2.5 and report["generator_bound"] == []
    assert all(w["cpu_ms_per_request"] > 0 and 0 < w["core_share"] < 1 for w in workers)
    assert report["repeats"] == 0  # each worker draws its own slice of the pool
    assert report["result_cache"]["lookups"] >= report["requests"]
    assert "Generators (3)" in html.read_text() and "generators" in run.stdout


def test_load_ends_early_on_sigterm_with_its_report(
    purple_agent: ServerProcess, tmp_path: Path
) -> None:
    """A load around an operation of unknown length (a rolling restart) is stopped by a signal."""
    out = tmp_path / "load.json"
    args = ["--agent", purple_agent.base_url, "--concurrency", "2", "--duration", "3600"]
    command = [sys.executable, "-m", "services.green_agent", "load", *args, "--out", str(out)]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    before = _completed(purple_agent)  # the agent is shared: count from here
    with subprocess.Popen(command, cwd=REPO, env=env, stdout=subprocess.DEVNULL) as load:
        try:
            # Stopped once it has answers to report: the agent's count of completed requests.
            wait_for(lambda: _completed(purple_agent) >= before + 3, timeout_s=60, what="answers")
            load.send_signal(signal.SIGTERM)
            assert load.wait(timeout=CLI_TIMEOUT_S) == 0
        finally:
            load.kill()
    report = json.loads(out.read_text())
    assert report["stopped_early"] is True and report["duration_s"] == 3600
    assert report["ok"] == report["requests"] >= 1 and report["errors"] == 0


def _completed(purple: ServerProcess) -> float:
    metrics = httpx.get(purple.base_url + "/metrics").text
    prefix = 'purple_request_duration_seconds_count{outcome="completed"} '
    return sum(
        float(line.removeprefix(prefix)) for line in metrics.splitlines() if line.startswith(prefix)
    )


async def test_green_a2a_server_runs_an_assessment(
    green_agent: ServerProcess, purple_agent: ServerProcess
) -> None:
    request = {
        "participants": {"retrieval_agent": purple_agent.base_url},
        "config": {"num_queries": 30, "top_k": 5, "random_seed": 3},
    }
    events = await assess(green_agent.base_url, request)
    updates = [e.status_update for e in events if e.HasField("status_update")]
    progress = [
        " ".join(get_text_parts(u.status.message.parts))
        for u in updates
        if u.status.state == TaskState.TASK_STATE_WORKING
    ]
    assert any("queries done" in p for p in progress), progress
    assert updates[-1].status.state == TaskState.TASK_STATE_COMPLETED
    (artifact,) = [e.artifact_update.artifact for e in events if e.HasField("artifact_update")]
    assert artifact.name == "results"
    (summary,) = get_text_parts(artifact.parts)
    (data,) = get_data_parts(artifact.parts)
    assert "NDCG@5" in summary and "30 answered" in summary
    assert (data["num_queries"], data["answered"], data["top_k"]) == (30, 30, 5)
    assert set(data["metrics"]) >= {"ndcg@5", "ndcg@10", "agentbeats_ndcg@5", "mrr"}


def _result_over_the_wire(green_url: str, protocol: str, streaming: bool, text: str) -> Any:
    """The data part of the assessment's result, read from the raw JSON of the answer."""
    if protocol == "0.3":
        answer = wire.stream(green_url, text)[0] if streaming else wire.send(green_url, text)
        assert answer.state == "completed", answer.status_text
        (artifact,) = answer.artifacts
        (data,) = [p["data"] for p in artifact["parts"] if p.get("kind") == "data"]
        return data
    message = {"messageId": uuid.uuid4().hex, "role": "ROLE_USER", "parts": [{"text": text}]}
    method = "SendStreamingMessage" if streaming else "SendMessage"
    params: dict[str, Any] = {"message": message}
    if not streaming:  # the answer waits for the task to end
        params["configuration"] = {"returnImmediately": False}
    body = {"jsonrpc": "2.0", "id": 1, "method": method, "params": params}
    headers = {"A2A-Version": "1.0"}
    if not streaming:
        task = wire.post(green_url, body, headers).json()["result"]["task"]
        artifacts = task["artifacts"]
    else:
        with httpx.stream("POST", green_url, json=body, headers=headers, timeout=120) as reply:
            events = [
                json.loads(line.removeprefix("data:"))["result"]
                for line in reply.iter_lines()
                if line.startswith("data:")
            ]
        artifacts = [e["artifactUpdate"]["artifact"] for e in events if "artifactUpdate" in e]
    (artifact,) = artifacts
    (data,) = [p["data"] for p in artifact["parts"] if "data" in p]
    return data


@pytest.mark.parametrize("protocol", ["0.3", "1.0"])
@pytest.mark.parametrize("streaming", [False, True], ids=["send", "stream"])
def test_counts_are_integers_on_the_wire(
    green_agent: ServerProcess, purple_agent: ServerProcess, protocol: str, streaming: bool
) -> None:
    # As the public evaluator sends them ("total_queries": 12, not 12.0), whichever protocol
    # and call asked; fractions stay fractions.
    request = {
        "participants": {"retrieval_agent": purple_agent.base_url},
        "config": {"num_queries": 12, "top_k": 5, "random_seed": 5},
    }
    data = _result_over_the_wire(green_agent.base_url, protocol, streaming, json.dumps(request))
    counts = ("total_queries", "successful_communications", "num_queries", "answered", "top_k")
    assert all(type(data[name]) is int for name in counts), {n: data[n] for n in counts}
    assert (data["total_queries"], data["top_k"], data["seed"]) == (12, 5, 5)
    assert type(data["latency"]["count"]) is int and type(data["failed"]) is int
    assert type(data["wall_s"]) is float and type(data["latency"]["mean_s"]) is float
