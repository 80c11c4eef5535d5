"""What keeps one input from breaking the load collector: a report whose figures do not hold is
refused before anything is stored, a kept file that would not merge or render is set aside at
start, and without a token the collector serves on a loopback address only.

The collector is the real server (``load-collect``) on a loopback port, started as a cluster
starts it; the reports are built here and broken as an attacker would break them."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.processes import REPO, ServerProcess, free_port, port_in_use
from services.green_agent.load.recorder import merge_load_reports
from services.green_agent.load.report import LoadReport
from tests.support.load_collector import (
    RUN,
    TOKEN,
    WORKERS,
    collector_process,
    hand_in_report,
    post_report,
    worker_report,
)

#: How long a refused start may take to exit: far above an import of the green agent.
EXIT_TIMEOUT_S = 60


def _attack(body: dict[str, Any]) -> dict[str, Any]:
    """The review's report: no requests, yet failures by reason (the page's share divides)."""
    return {**body, "requests": 0, "errors_by_reason": {"timeout": 1}}


def test_a_report_of_no_requests_with_failures_is_a_422_and_the_run_goes_on(
    collector: tuple[ServerProcess, Path],
) -> None:
    server, merged_file = collector
    # First, alone: its merge's page would divide by its 0 requests.
    refused = post_report(server, _attack(worker_report(0).model_dump(mode="json")))
    assert refused.status_code == 422
    error = refused.json()["error"]
    assert "not a load report" in error
    assert "ok 40 and errors 0 add up to 40, not requests 0" in error
    assert "errors_by_reason adds up to 1, not errors 0" in error
    # Nothing stored: no merge served, no file written.
    assert httpx.get(server.base_url + "/report").status_code == 404
    assert httpx.get(server.base_url + "/report.html").status_code == 404
    assert not list(merged_file.parent.glob("merged*"))
    # Last, after a real report: refused all the same, and the run not counted complete.
    hand_in_report(worker_report(0), server)
    refused = post_report(server, _attack(worker_report(1).model_dump(mode="json")))
    assert refused.status_code == 422 and "not requests 0" in refused.json()["error"]
    waiting = httpx.get(server.base_url + "/report").json()
    assert (waiting["complete"], waiting["waiting_for"]) == (False, [1])
    assert not merged_file.with_name("merged.worker-1.json").exists()
    assert httpx.get(server.base_url + "/report.html").status_code == 200
    # The worker's real report completes the run, and both reads serve the whole merge.
    hand_in_report(worker_report(1), server)
    merged = LoadReport.model_validate_json(httpx.get(server.base_url + "/report").content)
    assert merged.complete and merged == merge_load_reports([worker_report(0), worker_report(1)])
    page = httpx.get(server.base_url + "/report.html")
    assert page.status_code == 200 and "Generators (2)" in page.text
    assert "Incomplete" not in page.text


def _set(**figures: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda body: {**body, **figures}


def _every_span(span_s: float) -> Callable[[dict[str, Any]], dict[str, Any]]:
    def broken(body: dict[str, Any]) -> dict[str, Any]:
        for point in body["timeline"]:
            point["span_s"] = span_s  # valid to the schema; the merge's rates divide by it
        return body

    return broken


def _latencies(**fields: Any) -> Callable[[dict[str, Any]], dict[str, Any]]:
    return lambda body: {**body, "latencies": {**body["latencies"], **fields}}


BROKEN: list[tuple[str, Callable[[dict[str, Any]], dict[str, Any]], str]] = [
    ("more errors than requests", _set(errors=50), "ok 40 and errors 50 add up to 90"),
    ("reasons beyond the errors", _set(errors_by_reason={"timeout": 2}), "adds up to 2, not"),
    ("a reason of no failure", _set(errors_by_reason={"x": 0}), "errors_by_reason.x is 0: a"),
    ("a negative count", _set(dropped=-1), "dropped is -1: a figure is not negative"),
    ("an endless time", _set(wall_s=float("inf")), "wall_s is inf: a figure is a finite number"),
    ("a bucket of no width", _every_span(0.0), "timeline.0.span_s is 0.0: a bucket has a width"),
    (
        "a budget that does not parse",
        _set(thresholds=[{"budget": "p99<2 parsecs"}]),
        "thresholds.0.budget: Value error, 'p99<2parsecs': the limit '2 parsecs' is not a time",
    ),
    (
        "a closed loop's concurrency in an open loop",
        _set(concurrency=4),
        "an open loop states target_rate and no other pace",
    ),
    (
        "a loop of no kind",
        _set(loop="sideways"),
        "loop: Input should be 'open' or 'closed'",
    ),
    (
        "stages that make no shape",
        lambda body: {**body, "stages": []},
        "stages: a run has one stage at least",
    ),
    (
        "a timeline of a width no generator takes",
        _set(timeline_bucket_s=3.0),
        "timeline_bucket_s is 3.0: not a width a generator takes",
    ),
    (
        "other histogram buckets",
        _latencies(resolution=0.02),
        "latencies: Value error, buckets of resolution 0.02 from 1e-05 s",
    ),
    (
        "other display bins",
        lambda body: {**body, "latency_histogram": body["latency_histogram"][:3]},
        "latency_histogram: its bins are not the services' Prometheus buckets",
    ),
]


def test_figures_that_do_not_hold_are_a_422_naming_them_and_change_nothing(
    collector: tuple[ServerProcess, Path],
) -> None:
    server, merged_file = collector
    hand_in_report(worker_report(0), server)
    before = httpx.get(server.base_url + "/report").content
    files = {p: p.read_bytes() for p in merged_file.parent.glob("merged*")}
    for what, breaking, problem in BROKEN:
        refused = post_report(server, breaking(worker_report(1).model_dump(mode="json")))
        assert refused.status_code == 422, what
        assert problem in refused.json()["error"], (what, refused.json()["error"])
    assert httpx.get(server.base_url + "/report").content == before
    assert {p: p.read_bytes() for p in merged_file.parent.glob("merged*")} == files


def test_a_restarted_collector_sets_aside_a_kept_report_that_would_break_it(
    tmp_path: Path,
) -> None:
    server, merged_file = collector_process(tmp_path)
    # Worker 0's report as the collector before these checks kept it, the only one: its merge's
    # page divided by zero at every start (a crash loop).
    kept = merged_file.with_name("merged.worker-0.json")
    kept.write_text(json.dumps(_attack(worker_report(0).model_dump(mode="json"))))
    server.start(timeout_s=30)
    try:
        waiting = httpx.get(server.base_url + "/report")
        assert waiting.status_code == 404 and waiting.json()["waiting_for"] == [0, 1]
        assert not kept.exists() and kept.with_name(kept.name + ".unreadable").exists()
        assert f"kept report {kept} does not read (not a load report: " in server.log()
        assert "errors_by_reason adds up to 1, not errors 0" in server.log()
        for worker in range(WORKERS):
            hand_in_report(worker_report(worker), server)
        merged = LoadReport.model_validate_json(httpx.get(server.base_url + "/report").content)
        assert merged.complete
        assert merged == merge_load_reports([worker_report(0), worker_report(1)])
        assert httpx.get(server.base_url + "/report.html").status_code == 200
    finally:
        server.stop()


def _load_collect(*args: str) -> list[str]:
    return [sys.executable, "-m", "services.green_agent", "load-collect", *args]


@pytest.mark.parametrize("host", ["0.0.0.0", "::"])
def test_without_a_token_the_collector_refuses_to_serve_beyond_loopback(host: str) -> None:
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith("GREEN_LOAD_COLLECTOR_")}
    start = subprocess.run(
        _load_collect("--workers", "1", "--host", host, "--port", str(port)),
        cwd=REPO,
        env={**env, "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=EXIT_TIMEOUT_S,  # the code before this check served on: it never exited
    )
    assert start.returncode == 2, start.stderr
    assert f"would serve POST /reports on {host}, beyond this machine, without a token" in (
        start.stderr
    )
    assert "Set GREEN_LOAD_COLLECTOR_TOKEN or GREEN_LOAD_COLLECTOR_TOKEN_FILE" in start.stderr
    assert not port_in_use(port)


def test_with_a_token_the_collector_serves_on_every_address(tmp_path: Path) -> None:
    # As the chart runs it: on 0.0.0.0 in its pod, with the token of its Secret.
    port = free_port()
    server = ServerProcess(
        _load_collect("--workers", "1", "--run", RUN, "--host", "0.0.0.0", "--port", str(port)),
        port,
        env={"GREEN_LOAD_COLLECTOR_TOKEN": TOKEN},
        ready_path="/healthz",
        log_path=tmp_path / "collector.log",
    )
    with server:
        report = worker_report(0).model_dump(mode="json")
        assert post_report(server, report, token=None).status_code == 401
        assert post_report(server, report).status_code == 200
