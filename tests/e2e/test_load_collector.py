"""A split load run as a cluster runs it: each worker a process of its own (a Job's pod) that
hands its report to the load collector, which merges them into the one report of the run."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.processes import REPO, ServerProcess
from services.green_agent.load.report import LoadReport, merge_load_reports
from services.green_agent.load.workers import hand_in
from tests.support.green import CLI_TIMEOUT_S

WORKERS = 2
RUN = "release-r1"


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[tuple[ServerProcess, Path]]:
    out = tmp_path / "merged.json"
    args = ["load-collect", "--workers", str(WORKERS), "--run", RUN, "--out", str(out)]
    server = ServerProcess.module(
        "services.green_agent", args, ready_path="/healthz", log_path=tmp_path / "collector.log"
    )
    server.start(timeout_s=30)
    try:
        yield server, out
    finally:
        server.stop()


def _worker(index: int, agent: str, collector: str, out: Path) -> subprocess.Popen[bytes]:
    args = ["--agent", agent, "--rate", "10", "--duration", "1.5", "--queries", "test"]
    args += ["--worker", str(index), "--workers", str(WORKERS), "--out", str(out), "--run", RUN]
    # As a Job's pods start with their release: the agent may not answer yet.
    args += ["--wait-agent", "30"]
    command = [sys.executable, "-m", "services.green_agent", "load", *args]
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.Popen([*command, "--report-to", collector], cwd=REPO, env=env)


def test_workers_hand_in_their_reports_and_the_collector_merges_them(
    purple_agent: ServerProcess, collector: tuple[ServerProcess, Path], tmp_path: Path
) -> None:
    server, merged_file = collector
    pending = httpx.get(server.base_url + "/report")
    assert pending.status_code == 404 and pending.json()["waiting_for"] == [0, 1]
    outs = [tmp_path / f"worker-{i}.json" for i in range(WORKERS)]
    workers = [_worker(i, purple_agent.base_url, server.base_url, outs[i]) for i in range(2)]
    assert [w.wait(timeout=CLI_TIMEOUT_S) for w in workers] == [0, 0]
    reports = [LoadReport.model_validate_json(out.read_text()) for out in outs]
    merged = LoadReport.model_validate_json(httpx.get(server.base_url + "/report").content)
    assert merged == merge_load_reports(reports)
    assert merged.requests == sum(r.requests for r in reports) == 16  # 5/s each from 0 s to 1.5
    assert merged.run == RUN
    assert merged.ok == merged.latencies.count == merged.requests and merged.errors == 0
    assert json.loads(merged_file.read_text())["requests"] == merged.requests
    assert "Generators (2)" in httpx.get(server.base_url + "/report.html").text


def test_the_collector_refuses_what_is_not_a_report_of_its_run(
    purple_agent: ServerProcess, collector: tuple[ServerProcess, Path], tmp_path: Path
) -> None:
    server, _ = collector
    out = tmp_path / "worker-0.json"
    assert _worker(0, purple_agent.base_url, server.base_url, out).wait(CLI_TIMEOUT_S) == 0
    report = LoadReport.model_validate_json(out.read_text())
    url = server.base_url + "/reports"
    garbage = httpx.post(url, content=b'{"requests": "many"}')
    assert garbage.status_code == 400 and "not a load report" in garbage.json()["error"]
    stranger = report.model_copy(update={"worker": 7})
    with pytest.raises(RuntimeError, match="worker 7 is not one of this run's 2"):
        asyncio.run(hand_in(stranger, server.base_url))
    other_run = report.model_copy(update={"worker": 1, "agent": "http://elsewhere/"})
    with pytest.raises(RuntimeError, match="not the same run"):
        asyncio.run(hand_in(other_run, url))
    earlier_revision = report.model_copy(update={"worker": 1, "run": "release-r0"})
    with pytest.raises(RuntimeError, match="this collector gathers run 'release-r1'"):
        asyncio.run(hand_in(earlier_revision, url))
    # What was stored stays: worker 0's report, and the run still waits for worker 1.
    waiting = httpx.get(server.base_url + "/report")
    assert waiting.status_code == 404 and waiting.json()["waiting_for"] == [1]


def test_a_restarted_collector_takes_back_the_reports_it_had(
    purple_agent: ServerProcess, collector: tuple[ServerProcess, Path], tmp_path: Path
) -> None:
    server, merged_file = collector
    outs = [tmp_path / f"worker-{i}.json" for i in range(WORKERS)]
    assert _worker(0, purple_agent.base_url, server.base_url, outs[0]).wait(CLI_TIMEOUT_S) == 0
    # An earlier run's report for worker 1 in the same folder is not taken back.
    earlier = LoadReport.model_validate_json(outs[0].read_text())
    stale = merged_file.with_name("merged.worker-1.json")
    stale.write_text(
        earlier.model_copy(update={"worker": 1, "run": "release-r0"}).model_dump_json()
    )
    server.stop()  # the container restarts; its volume stays
    server.start(timeout_s=30)
    waiting = httpx.get(server.base_url + "/report")
    assert waiting.status_code == 404 and waiting.json()["waiting_for"] == [1]
    assert _worker(1, purple_agent.base_url, server.base_url, outs[1]).wait(CLI_TIMEOUT_S) == 0
    merged = LoadReport.model_validate_json(httpx.get(server.base_url + "/report").content)
    reports = [LoadReport.model_validate_json(out.read_text()) for out in outs]
    assert merged == merge_load_reports(reports)
