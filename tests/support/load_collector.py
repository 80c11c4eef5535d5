"""The load collector as a cluster runs it (``load-collect`` on a loopback port, with a token as
the chart gives it), and workers' reports built here, without an agent."""

from __future__ import annotations

import asyncio
import json
import random
from pathlib import Path
from typing import Any

import httpx

from harness.processes import ServerProcess
from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.load.report import LoadReport
from services.green_agent.load.workers import hand_in
from tests.support.load_reports import report_of

WORKERS = 2
RUN = "release-r1"
TOKEN = "load-collector-test-token-0123456789"
BEARER = f"Bearer {TOKEN}"


def collector_process(
    tmp_path: Path, scrape_token: str | None = None, metrics_port: int | None = None
) -> tuple[ServerProcess, Path]:
    """A collector of :data:`WORKERS` reports of :data:`RUN` writing to ``tmp_path``; its file.

    With ``scrape_token`` its ``/metrics`` answers that token only, as with the chart's auth on;
    with ``metrics_port`` it serves ``/metrics`` there alone, as the chart runs it.
    """
    out = tmp_path / "merged.json"
    args = ["load-collect", "--workers", str(WORKERS), "--run", RUN, "--out", str(out)]
    args += ["--html", str(tmp_path / "merged.html")]
    env = {"GREEN_LOAD_COLLECTOR_TOKEN": TOKEN}
    if scrape_token is not None:
        env["GREEN_METRICS_TOKEN"] = scrape_token
    if metrics_port is not None:
        env["SERVER_METRICS_PORT"] = str(metrics_port)
    server = ServerProcess.module(
        "services.green_agent",
        args,
        env=env,
        ready_path="/healthz",
        log_path=tmp_path / "collector.log",
    )
    return server, out


def worker_report(worker: int, run: str = RUN, seed: int = 0) -> LoadReport:
    """Worker ``worker``'s report of a run of 2 s at 20/s, built here: no agent needed."""
    rng = random.Random(worker * 100 + seed)
    outcomes = [
        QueryOutcome(f"q{worker}-{i}", rng.uniform(0.005, 0.05), ["MED-1"], started_s=i / 20)
        for i in range(40)
    ]
    return report_of(
        outcomes,
        dropped=0,
        wall_s=2.0,
        agent="http://agent",
        protocol="1.0",
        duration_s=2.0,
        concurrency=None,
        rate=20.0 * WORKERS,
        worker=worker,
        run=run,
    )


def post_report(server: ServerProcess, body: Any, token: str | None = TOKEN) -> httpx.Response:
    """``POST /reports`` of ``body`` as JSON, with ``token`` unless it is None.

    Python's JSON, not httpx's: it writes a float out of range as ``Infinity``, as an attacker may.
    """
    headers = {"content-type": "application/json"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    return httpx.post(server.base_url + "/reports", content=json.dumps(body), headers=headers)


def hand_in_report(report: LoadReport, server: ServerProcess) -> None:
    """Hand ``report`` in to ``server`` as a worker does, with the token."""
    asyncio.run(hand_in(report, server.base_url, BEARER))
