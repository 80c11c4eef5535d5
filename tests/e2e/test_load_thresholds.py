"""Budgets gate a real load run: a breach exits 3 and names the budget, a run within them exits 0,
and a split run is judged on its merged report, in one process or as a cluster's workers."""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.processes import REPO, ServerProcess
from services.green_agent.load.thresholds import EXIT_BREACHED
from tests.support.green import CLI_TIMEOUT_S, run_green

#: A budget no agent meets: a microsecond is far below any answer over HTTP.
BREACH = "p50<1us"
RUN = "release-r1"


def _load(agent: str, *extra: str) -> list[str]:
    return ["--agent", agent, "--rate", "10", "--duration", "1", "--queries", "test", *extra]


def test_a_breached_budget_exits_3_and_names_it(
    purple_agent: ServerProcess, tmp_path: Path
) -> None:
    out = tmp_path / "load.json"
    run = run_green(
        "load", *_load(purple_agent.base_url, "--out", str(out), "--threshold", f"p99<60s,{BREACH}")
    )
    assert run.returncode == EXIT_BREACHED, run.stdout + run.stderr
    assert f"budget breached: {BREACH}: " in run.stderr
    assert "BREACHED" in run.stdout and "p99<60s" in run.stdout
    report = json.loads(out.read_text())
    assert [(t["budget"], t["passed"]) for t in report["thresholds"]] == [
        ("p99<60s", True),
        (BREACH, False),
    ]
    assert report["breached"][0].startswith(f"{BREACH}: ")
    assert report["thresholds"][1]["measured"] == report["latency"]["p50_s"] > 0


def test_a_run_within_its_budgets_exits_0_and_writes_locust_s_csv(
    purple_agent: ServerProcess, tmp_path: Path
) -> None:
    out, prefix = tmp_path / "load.json", tmp_path / "csv" / "load"
    budgets = ["--threshold", "p99<60s", "--threshold", "errors<50%,rate>=1"]
    run = run_green(
        "load", *_load(purple_agent.base_url, "--out", str(out), "--csv", str(prefix), *budgets)
    )
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(out.read_text())
    assert [t["passed"] for t in report["thresholds"]] == [True, True, True]
    assert report["breached"] == [] and "budget breached" not in run.stderr
    with (tmp_path / "csv" / "load_stats.csv").open(newline="") as file:
        aggregated = list(csv.DictReader(file))[-1]
    assert aggregated["Name"] == "Aggregated"
    assert int(aggregated["Request Count"]) == report["requests"] > 0
    assert int(aggregated["Failure Count"]) == report["errors"]
    assert (tmp_path / "csv" / "load_stats_history.csv").is_file()
    assert (tmp_path / "csv" / "load_failures.csv").is_file()


def test_a_split_run_is_judged_on_its_merged_report(
    purple_agent: ServerProcess, tmp_path: Path
) -> None:
    # Two workers at 5/s each: each alone breaches rate>=8, the run does not; BREACH it does.
    out = tmp_path / "load.json"
    args = _load(purple_agent.base_url, "--workers", "2", "--out", str(out))
    run = run_green("load", *args, "--threshold", f"rate>=8,{BREACH}")
    assert run.returncode == EXIT_BREACHED, run.stdout + run.stderr
    report = json.loads(out.read_text())
    assert [(t["budget"], t["passed"]) for t in report["thresholds"]] == [
        ("rate>=8", True),
        (BREACH, False),
    ]
    assert len(report["breached"]) == 1 and report["breached"][0].startswith(f"{BREACH}: ")


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[ServerProcess]:
    args = ["load-collect", "--workers", "2", "--run", RUN, "--out", str(tmp_path / "merged.json")]
    server = ServerProcess.module(
        "services.green_agent", args, ready_path="/healthz", log_path=tmp_path / "collector.log"
    )
    server.start(timeout_s=30)
    try:
        yield server
    finally:
        server.stop()


def test_each_worker_of_a_cluster_run_exits_with_the_verdict_on_the_collector_s_merge(
    purple_agent: ServerProcess, collector: ServerProcess, tmp_path: Path
) -> None:
    """As the pods of the chart's Indexed Job: each hands its report in, waits for the whole
    run, and exits 3 on its breach, so the Job fails."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    workers = []
    for index in range(2):
        extra = ["--worker", str(index), "--workers", "2", "--run", RUN]
        extra += ["--report-to", collector.base_url + "/reports", "--threshold", BREACH]
        command = [sys.executable, "-m", "services.green_agent", "load"]
        command += _load(purple_agent.base_url, *extra)
        workers.append(
            subprocess.Popen(
                command,
                cwd=REPO,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
    outputs = [w.communicate(timeout=CLI_TIMEOUT_S) for w in workers]
    assert [w.returncode for w in workers] == [EXIT_BREACHED] * 2, outputs
    for stdout, stderr in outputs:
        assert "waiting for the run's merged report" in stdout
        assert f"budget breached: {BREACH}: " in stderr
    merged = httpx.get(collector.base_url + "/report").json()
    assert merged["requests"] == 10 and [w["worker"] for w in merged["workers"]] == [0, 1]
    assert merged["thresholds"][0]["budget"] == BREACH
    assert merged["thresholds"][0]["passed"] is False
