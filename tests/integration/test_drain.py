"""SIGTERM drains: readiness fails first while requests are still served, each answer closing its
connection (pooled clients move away), then the server stops: under uvicorn and under gunicorn."""

from __future__ import annotations

import signal
from collections.abc import Callable
from pathlib import Path

import httpx
import pytest

from harness.processes import ServerProcess, gunicorn_mcp_server
from tests.support.polling import wait_for
from tests.support.small_index import SmallIndex

DRAIN_S = 5.0  # long enough for a loaded machine to see the drain before the stop
HANG_S = 60.0  # only a server that never handles SIGTERM takes this long


def _uvicorn(env: dict[str, str], tmp_path: Path) -> ServerProcess:
    return ServerProcess.module("services.mcp_server", env=env, log_path=tmp_path / "mcp.log")


def _gunicorn(env: dict[str, str], tmp_path: Path) -> ServerProcess:
    return gunicorn_mcp_server(env, tmp_path / "gunicorn.log")


# uvicorn re-raises the SIGTERM it drained for; gunicorn's master exits cleanly once its workers
# have stopped.
@pytest.mark.parametrize(
    ("start", "exit_status"),
    [(_uvicorn, -signal.SIGTERM), (_gunicorn, 0)],
    ids=["uvicorn", "gunicorn"],
)
def test_sigterm_fails_readiness_first_then_stops(
    small_index: SmallIndex,
    tmp_path: Path,
    start: Callable[[dict[str, str], Path], ServerProcess],
    exit_status: int,
) -> None:
    env = {**small_index.env(private_copy=True), "SERVER_DRAIN_S": str(DRAIN_S)}
    server = start(env, tmp_path)
    server.start(timeout_s=90)
    try:
        base = server.base_url
        pooled = httpx.Client()  # a keep-alive client, as a green agent or the purple agent is
        assert pooled.get(f"{base}/readyz").status_code == 200
        assert "close" not in pooled.get(f"{base}/healthz").headers.get("connection", "")
        assert server.pid is not None
        server.signal(signal.SIGTERM)
        # Polled until the signal is handled, however long that takes: the drain only starts
        # then, so readiness must fail while the server still runs (a refused connection here
        # means it stopped without failing readiness first).
        answers: list[httpx.Response] = []

        def readiness_failed() -> bool:
            answers.append(httpx.get(f"{base}/readyz"))
            return answers[-1].status_code != 200

        wait_for(readiness_failed, HANG_S, "failed readiness after SIGTERM")
        ready = answers[-1]
        assert ready.status_code == 503, ready.text
        assert ready.json() == {"status": "not ready", "reason": "draining: shutting down"}
        # Still serving whatever a load balancer sends before it notices, and every answer
        # closes its connection: the pooled client's next request opens a new one.
        search = pooled.post(f"{base}/search_nfcorpus", json={"query": "soy", "top_k": 3})
        assert search.status_code == 200 and len(search.json()["results"]) == 3
        assert search.headers["connection"] == "close"
        returncode = server.wait(timeout_s=DRAIN_S + HANG_S)
        assert returncode == exit_status, server.log()
        pooled.close()
    finally:
        server.stop()
