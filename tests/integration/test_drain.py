"""SIGTERM drains: readiness fails first while requests are still served, then the server stops."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import httpx

from services.common.processes import ServerProcess
from tests.conftest import SmallIndex

DRAIN_S = 5.0  # long enough for a loaded machine to see the drain before the stop


def test_sigterm_fails_readiness_first_then_stops(small_index: SmallIndex, tmp_path: Path) -> None:
    env = {**small_index.env(private_copy=True), "SERVER_DRAIN_S": str(DRAIN_S)}
    server = ServerProcess.module("services.mcp_server", env=env, log_path=tmp_path / "mcp.log")
    server.start()
    try:
        base = server.base_url
        assert httpx.get(f"{base}/readyz").status_code == 200
        assert server.pid is not None
        stopped_at = time.monotonic()
        server.signal(signal.SIGTERM)
        ready = httpx.get(f"{base}/readyz")
        while ready.status_code == 200:  # until the signal is handled (polled, not guessed)
            assert time.monotonic() - stopped_at < DRAIN_S, "readiness never failed"
            time.sleep(0.02)
            ready = httpx.get(f"{base}/readyz")
        assert ready.status_code == 503, ready.text
        assert ready.json() == {"status": "not ready", "reason": "draining: shutting down"}
        # Still serving whatever a load balancer sends before it notices.
        search = httpx.post(f"{base}/search_nfcorpus", json={"query": "soy", "top_k": 3})
        assert search.status_code == 200 and len(search.json()["results"]) == 3
        returncode = server.wait(timeout_s=DRAIN_S + 10)
        assert time.monotonic() - stopped_at >= DRAIN_S
        assert returncode == -signal.SIGTERM, server.log()  # stopped as SIGTERM asks
    finally:
        server.stop()
