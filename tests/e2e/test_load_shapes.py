"""Load shapes against the real purple agent (and the real MCP server behind it): each stage
achieves its rate, the warm-up is counted apart and left out of every figure, and the progress
line shows the run as it goes on. Every process is real and talks over loopback HTTP."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from harness.processes import ServerProcess
from services.green_agent.load.progress import PREFIX
from tests.support.green import run_green

# Modest rates for a 2-core machine that also runs the agent and the MCP server.
STAGES = "3s:10/s,ramp:4s:30/s,3s:20/s"
ASKED = [(10.0, 30), (20.0, 80), (20.0, 60)]  # each stage's mean rate and its requests
WARMUP_S, WARMUP_RATE = 2, 10


def test_a_staged_open_loop_achieves_each_stage_and_leaves_the_warm_up_out(
    purple_agent: ServerProcess, tmp_path: Path
) -> None:
    out, html = tmp_path / "load.json", tmp_path / "load.html"
    args = ["--agent", purple_agent.base_url, "--stages", STAGES, "--warmup", str(WARMUP_S)]
    run = run_green("load", *args, "--progress", "1", "--out", str(out), "--html", str(html))
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(out.read_text())
    assert report["errors"] == 0 and report["dropped"] == 0, report["error_samples"]
    stages = report["stages"]
    assert [(s["kind"], s["target"]) for s in stages] == [("step", 10), ("ramp", 30), ("step", 20)]
    for stage, (rate, requests) in zip(stages, ASKED, strict=True):
        assert stage["asked_rate"] == pytest.approx(rate)
        assert stage["achieved_rate"] == pytest.approx(rate, rel=0.05), stage
        assert stage["started"] == pytest.approx(requests, abs=1), stage
        assert stage["ok"] == stage["started"] and stage["dropped"] == 0
    # The warm-up ran and was counted as the warm-up's...
    warmup = report["warmup"]
    assert (warmup["target"], warmup["duration_s"]) == (WARMUP_RATE, WARMUP_S)
    assert warmup["requests"] == warmup["ok"] == WARMUP_S * WARMUP_RATE
    assert warmup["errors"] == warmup["dropped"] == 0
    # ... and is in no other figure: requests, latencies, histogram, timeline, the run's rate.
    measured = sum(requests for _, requests in ASKED)
    assert report["requests"] == report["ok"] == sum(s["started"] for s in stages)
    assert report["requests"] == pytest.approx(measured, abs=2)
    assert report["latencies"]["count"] == report["ok"] == report["latency"]["count"]
    assert sum(b["count"] for b in report["latency_histogram"]) == report["ok"]
    assert sum(p["answered"] + p["failed"] for p in report["timeline"]) == report["requests"]
    assert report["duration_s"] == 10 and report["target_rate"] == pytest.approx(measured / 10)
    assert report["generator_bound"] == []
    # Shown: the stages and the warm-up on the terminal and the page, progress lines meanwhile.
    assert "3 stages" in run.stdout and "warm-up" in run.stdout
    assert "Stages (3)" in html.read_text()
    lines = [line for line in run.stderr.splitlines() if line.startswith(PREFIX)]
    assert len(lines) >= 8, run.stderr
    assert "warm-up at 10/s" in lines[0] and any("stage 2/3 ramp to 30/s" in x for x in lines)
    assert all("/s done" in x and "errors" in x and "in flight" in x for x in lines)


def test_a_staged_closed_loop_across_two_workers_merges_its_stages(
    purple_agent: ServerProcess, tmp_path: Path
) -> None:
    out = tmp_path / "load.json"
    args = ["--agent", purple_agent.base_url, "--stages", "2s:2,ramp:2s:4", "--warmup", "1s"]
    run = run_green("load", *args, "--workers", "2", "--progress", "1", "--out", str(out))
    assert run.returncode == 0, run.stdout + run.stderr
    report = json.loads(out.read_text())
    assert report["errors"] == 0 and report["loop"] == "closed"
    assert report["concurrency"] == 4  # the peak, of both workers
    two, ramp = report["stages"]
    assert (two["target"], ramp["start_target"], ramp["target"]) == (2, 2, 4)
    assert (two["asked_concurrency"], ramp["asked_concurrency"]) == (2, 3)
    for stage in (two, ramp):
        # Workers send back to back: in flight nearly all the time the stage asks.
        assert 0.7 * stage["asked_concurrency"] <= stage["mean_concurrency"], stage
        assert stage["mean_concurrency"] <= stage["asked_concurrency"] + 0.1, stage
        assert stage["achieved_rate"] == stage["completed_rate"] > 0
    assert report["requests"] == sum(s["started"] for s in report["stages"])
    assert report["warmup"]["target"] == 2 and report["warmup"]["requests"] > 0
    assert report["latencies"]["count"] == report["ok"] == report["requests"]
    # Each worker's progress lines reach the terminal, named.
    for worker in (0, 1):
        assert f"worker {worker}: {PREFIX}" in run.stderr, run.stderr
