"""Generators that hand the collector their figures as they run: a live report and page, and a
generator killed mid-run whose share up to its last snapshot stays in the run.

Everything is real: the purple agent and its MCP server, two generator processes (a Job's pods)
and the collector, on loopback ports, with the token as the chart gives it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import httpx

from harness.processes import REPO, ServerProcess
from services.green_agent.load.report import LoadReport
from tests.support.green import CLI_TIMEOUT_S
from tests.support.load_collector import RUN, TOKEN, WORKERS
from tests.support.polling import wait_for

EVERY_S = 0.5  # seconds between a generator's snapshots
DURATION_S = 8.0


def _generator(index: int, agent: str, collector: str, log: Path) -> subprocess.Popen[bytes]:
    args = ["--agent", agent, "--rate", "10", "--duration", str(DURATION_S)]
    args += ["--queries", "test", "--worker", str(index), "--workers", str(WORKERS)]
    args += ["--run", RUN, "--report-to", collector, "--report-every", str(EVERY_S)]
    # Budgets: the surviving generator waits for the run's merge to judge them.
    args += ["--threshold", "errors<100%", "--progress", "0", "--wait-agent", "30"]
    command = [sys.executable, "-m", "services.green_agent", "load", *args]
    env = {**os.environ, "PYTHONPATH": str(REPO), "GREEN_LOAD_COLLECTOR_TOKEN": TOKEN}
    with log.open("wb") as out:
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)


def _live(server: ServerProcess) -> LoadReport | None:
    answer = httpx.get(server.base_url + "/report", timeout=10)
    return LoadReport.model_validate_json(answer.content) if answer.status_code == 200 else None


def _worker_requests(report: LoadReport | None, worker: int) -> int:
    if report is None:
        return 0
    return next((w.requests for w in report.workers if w.worker == worker), 0)


def test_the_run_is_live_and_a_killed_generator_keeps_its_share(
    purple_agent: ServerProcess, collector: tuple[ServerProcess, Path], tmp_path: Path
) -> None:
    server, merged_file = collector
    logs = [tmp_path / f"generator-{i}.log" for i in range(WORKERS)]
    generators = [_generator(i, purple_agent.base_url, server.base_url, logs[i]) for i in (0, 1)]
    try:
        # Live: both generators' figures arrive while they run, and grow.
        wait_for(
            lambda: all(_worker_requests(_live(server), w) > 0 for w in (0, 1)),
            timeout_s=CLI_TIMEOUT_S,
            what="both generators' first snapshots",
        )
        first = _live(server)
        assert first is not None and not first.complete and first.waiting_for == [0, 1]
        assert {w.status for w in first.workers} == {"running"}
        page = httpx.get(server.base_url + "/report.html").text
        assert f'<meta http-equiv="refresh" content="{EVERY_S:g}">' in page and "Live:" in page
        wait_for(
            lambda: (_live(server) or first).requests > first.requests,
            timeout_s=10 * EVERY_S,
            what="the live figures to grow",
        )
        # Generator 1 dies (SIGKILL: no report at its end) once it has handed in a few seconds.
        wait_for(
            lambda: _worker_requests(_live(server), 1) >= 15,
            timeout_s=CLI_TIMEOUT_S,
            what="generator 1's figures of its first seconds",
        )
        # Killed as soon as a new snapshot of it has come: what the kill loses is what it did
        # since, at most one interval.
        seen = _worker_requests(_live(server), 1)
        wait_for(
            lambda: _worker_requests(_live(server), 1) != seen,
            timeout_s=10 * EVERY_S,
            what="generator 1's next snapshot",
        )
        before_kill = _worker_requests(_live(server), 1)
        generators[1].send_signal(signal.SIGKILL)
        generators[1].wait(timeout=10)
        # The survivor runs to its end and gets the run's verdict, judged on the merge.
        assert generators[0].wait(timeout=DURATION_S + CLI_TIMEOUT_S) == 0, logs[0].read_text()
    finally:
        for generator in generators:
            generator.kill()
    merged = _live(server)
    assert merged is not None and merged.complete and merged.cut_short == [1]
    statuses = {w.worker: w.status for w in merged.workers}
    assert statuses == {0: "finished", 1: "cut short"}
    # Its share up to its last snapshot stays: all that was live just before the kill.
    kept = _worker_requests(merged, 1)
    assert kept >= before_kill
    assert merged.requests == _worker_requests(merged, 0) + kept
    assert merged.thresholds and merged.breached == []
    assert "budget breached" not in logs[0].read_text()
    assert LoadReport.model_validate_json(merged_file.read_text()).cut_short == [1]
    page = httpx.get(server.base_url + "/report.html").text
    assert "Cut short: workers 1" in page and 'http-equiv="refresh"' not in page
