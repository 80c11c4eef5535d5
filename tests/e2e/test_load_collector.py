"""A split load run as a cluster runs it: each worker a process of its own (a Job's pod) that
hands its report to the load collector, which merges them into the one report of the run.

The collector is the real server on a loopback port, with a token as the chart gives it; the
tests of what it refuses and what it survives hand it reports built here, without an agent."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.processes import REPO, ServerProcess
from services.green_agent.load.histogram import MAX_BUCKET
from services.green_agent.load.recorder import merge_load_reports
from services.green_agent.load.report import LoadReport
from services.green_agent.load.workers import hand_in
from tests.support.green import CLI_TIMEOUT_S
from tests.support.load_collector import (
    BEARER,
    RUN,
    TOKEN,
    WORKERS,
    collector_process,
    hand_in_report,
    post_report,
    worker_report,
)


def _worker(index: int, agent: str, collector: str, out: Path) -> subprocess.Popen[bytes]:
    args = ["--agent", agent, "--rate", "10", "--duration", "1.5", "--queries", "test"]
    args += ["--worker", str(index), "--workers", str(WORKERS), "--out", str(out), "--run", RUN]
    # As a Job's pods start with their release: the agent may not answer yet.
    args += ["--wait-agent", "30"]
    command = [sys.executable, "-m", "services.green_agent", "load", *args]
    # The token as the chart gives it to the generators: hand_in sends it.
    env = {**os.environ, "PYTHONPATH": str(REPO), "GREEN_LOAD_COLLECTOR_TOKEN": TOKEN}
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
    headers = {"authorization": BEARER, "content-type": "application/json"}
    garbage = httpx.post(url, content=b'{"requests": "many"}', headers=headers)
    assert garbage.status_code == 422 and "not a load report" in garbage.json()["error"]
    stranger = report.model_copy(update={"worker": 7})
    with pytest.raises(RuntimeError, match="worker 7 is not one of this run's 2"):
        asyncio.run(hand_in(stranger, server.base_url, BEARER))
    other_run = report.model_copy(update={"worker": 1, "agent": "http://elsewhere/"})
    with pytest.raises(RuntimeError, match="not the same run"):
        asyncio.run(hand_in(other_run, url, BEARER))
    earlier_revision = report.model_copy(update={"worker": 1, "run": "release-r0"})
    with pytest.raises(RuntimeError, match="this collector gathers run 'release-r1'"):
        asyncio.run(hand_in(earlier_revision, url, BEARER))
    # What was stored stays: worker 0's report, served alone and marked incomplete.
    partial = LoadReport.model_validate_json(httpx.get(server.base_url + "/report").content)
    assert (partial.complete, partial.waiting_for) == (False, [1])
    assert partial == merge_load_reports([report]).model_copy(
        update={"complete": False, "waiting_for": [1]}
    )


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
    assert waiting.status_code == 200 and waiting.json()["waiting_for"] == [1]
    assert _worker(1, purple_agent.base_url, server.base_url, outs[1]).wait(CLI_TIMEOUT_S) == 0
    merged = LoadReport.model_validate_json(httpx.get(server.base_url + "/report").content)
    reports = [LoadReport.model_validate_json(out.read_text()) for out in outs]
    assert merged == merge_load_reports(reports)


def test_the_first_report_is_served_at_once_marked_incomplete(
    collector: tuple[ServerProcess, Path], tmp_path: Path
) -> None:
    server, merged_file = collector
    assert httpx.get(server.base_url + "/report.html").status_code == 404
    first = worker_report(1)
    hand_in_report(first, server)
    partial = LoadReport.model_validate_json(httpx.get(server.base_url + "/report").content)
    assert (partial.complete, partial.waiting_for) == (False, [0])
    assert partial.requests == first.requests and [w.worker for w in partial.workers] == [1]
    page = httpx.get(server.base_url + "/report.html").text
    assert "Live: waiting for workers 0." in page and "(incomplete)</title>" in page
    # The files show the same partial merge, replaced by the whole one when it comes.
    assert LoadReport.model_validate_json(merged_file.read_text()) == partial
    hand_in_report(worker_report(0), server)
    whole = LoadReport.model_validate_json(httpx.get(server.base_url + "/report").content)
    assert (whole.complete, whole.waiting_for) == (True, [])
    assert whole == merge_load_reports([worker_report(0), first])
    assert LoadReport.model_validate_json(merged_file.read_text()) == whole
    assert "Incomplete" not in (tmp_path / "merged.html").read_text()


def test_a_collector_restarted_on_a_torn_report_still_completes_its_run(tmp_path: Path) -> None:
    server, merged_file = collector_process(tmp_path)
    server.start(timeout_s=30)
    try:
        hand_in_report(worker_report(0), server)
        server.stop()
        # Killed while it wrote worker 1's report (as a plain write_text could be): half a file,
        # and a temporary file of an interrupted write beside the merged one.
        torn = merged_file.with_name("merged.worker-1.json")
        text = worker_report(1).model_dump_json()
        torn.write_text(text[: len(text) // 2])
        leftover = merged_file.with_name(".merged.json.x1y2z3.tmp")
        leftover.write_text('{"agent": ')
        server.start(timeout_s=30)
        waiting = httpx.get(server.base_url + "/report").json()
        assert (waiting["complete"], waiting["waiting_for"]) == (False, [1])
        aside = torn.with_name("merged.worker-1.json.unreadable")
        assert aside.read_text() == text[: len(text) // 2] and not torn.exists()
        assert not leftover.exists()
        assert f"kept report {torn} does not read (not a load report: " in server.log()
        # The worker's hand-in, retried once the collector is back, completes the run.
        hand_in_report(worker_report(1), server)
        merged = LoadReport.model_validate_json(httpx.get(server.base_url + "/report").content)
        assert merged.complete and merged == merge_load_reports(
            [worker_report(0), worker_report(1)]
        )
        assert LoadReport.model_validate_json(merged_file.read_text()) == merged
        assert LoadReport.model_validate_json(torn.read_text()) == worker_report(1)
    finally:
        server.stop()
    assert not list(tmp_path.glob(".*.tmp"))  # every write renamed into place


def test_a_report_for_a_complete_run_is_refused_and_the_merge_stays(
    collector: tuple[ServerProcess, Path],
) -> None:
    server, merged_file = collector
    for worker in range(WORKERS):
        hand_in_report(worker_report(worker), server)
    published = httpx.get(server.base_url + "/report").content
    files = {p: p.read_bytes() for p in merged_file.parent.glob("merged*")}
    again = post_report(server, worker_report(0, seed=1).model_dump(mode="json"))
    assert again.status_code == 409
    assert "run 'release-r1' is complete" in again.json()["error"]
    with pytest.raises(RuntimeError, match="is complete"):
        hand_in_report(worker_report(1, seed=1), server)
    assert httpx.get(server.base_url + "/report").content == published
    assert {p: p.read_bytes() for p in merged_file.parent.glob("merged*")} == files


def test_reports_need_the_token_and_a_refused_one_changes_nothing(
    collector: tuple[ServerProcess, Path],
) -> None:
    server, merged_file = collector
    body = worker_report(0).model_dump(mode="json")
    for token in (None, "not-the-token-but-long-enough", TOKEN + "x"):
        refused = post_report(server, body, token)
        assert refused.status_code == 401, token
        assert refused.headers["www-authenticate"].startswith("Bearer")
    with pytest.raises(RuntimeError, match="authentication required"):
        asyncio.run(hand_in(worker_report(0), server.base_url))
    # Nothing was taken: no report served, no file written. The reads need no token.
    waiting = httpx.get(server.base_url + "/report")
    assert waiting.status_code == 404 and waiting.json()["waiting_for"] == [0, 1]
    assert not list(merged_file.parent.glob("merged*"))
    assert post_report(server, body).status_code == 200
    assert httpx.get(server.base_url + "/report").json()["waiting_for"] == [1]


def _histogram_broken(body: dict[str, Any], how: str) -> dict[str, Any]:
    latencies = body["latencies"]
    if how == "index":
        latencies["counts"] = {"100000": latencies["count"]}
    elif how == "negative":
        latencies["counts"], latencies["count"] = {"5": 3, "6": -1}, 2  # adding up to count
    elif how == "sum":
        latencies["count"] += 1
    elif how == "timeline":
        body["timeline"][1]["latencies"]["counts"] = {str(MAX_BUCKET + 1): 1}
        body["timeline"][1]["latencies"]["count"] = 1
    return body


@pytest.mark.parametrize(
    ("how", "problem"),
    [
        ("index", f"latencies: Value error, bucket index 100000 is outside 0..{MAX_BUCKET}"),
        ("negative", "latencies: Value error, bucket 6 has a negative count"),
        ("sum", "latencies: Value error, the bucket counts add up to 40, not count 41"),
        ("timeline", f"timeline.1.latencies: Value error, bucket index {MAX_BUCKET + 1} is"),
    ],
)
def test_a_histogram_out_of_bounds_is_a_422_and_changes_nothing(
    collector: tuple[ServerProcess, Path], how: str, problem: str
) -> None:
    server, _ = collector
    hand_in_report(worker_report(0), server)
    before = httpx.get(server.base_url + "/report").content
    refused = post_report(server, _histogram_broken(worker_report(1).model_dump(mode="json"), how))
    assert refused.status_code == 422
    assert problem in refused.json()["error"] and "not a load report" in refused.json()["error"]
    assert httpx.get(server.base_url + "/report").content == before


def test_a_report_posted_as_anything_but_json_is_a_415_and_changes_nothing(
    collector: tuple[ServerProcess, Path],
) -> None:
    server, merged_file = collector
    body = worker_report(0).model_dump_json()
    auth = {"authorization": f"Bearer {TOKEN}"}
    for kind in ("text/plain", "application/x-www-form-urlencoded", None):
        headers = auth if kind is None else {**auth, "content-type": kind}
        refused = httpx.post(server.base_url + "/reports", content=body, headers=headers)
        assert refused.status_code == 415, kind
        assert "application/json" in refused.json()["detail"][0]["message"]
    assert httpx.get(server.base_url + "/report").status_code == 404
    assert not list(merged_file.parent.glob("merged*"))
