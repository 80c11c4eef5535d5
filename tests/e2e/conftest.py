"""End-to-end fixtures: the purple and green agents as real processes, started from their CLIs."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from tests.support.servers import REPO, free_port, wait_until_ready


class AgentProcess:
    """``python -m <module> <args>`` on a free loopback port, logging to a file."""

    def __init__(self, module: str, args: Sequence[str], ready_path: str, log: Path) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self._cmd = [sys.executable, "-m", module, *args, "--host", "127.0.0.1"]
        self._cmd += ["--port", str(self.port)]
        self._ready = self.url + ready_path
        self._log = log
        self._process: subprocess.Popen[bytes] | None = None

    def __enter__(self) -> AgentProcess:
        env = {**os.environ, "PYTHONPATH": str(REPO), "OPENBLAS_NUM_THREADS": "1"}
        with open(self._log, "ab") as log:
            self._process = subprocess.Popen(self._cmd, cwd=REPO, env=env, stdout=log, stderr=log)
        wait_until_ready(self._ready, 30.0, self._process)
        return self

    def __exit__(self, *_: object) -> None:
        assert self._process is not None
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()

    def log(self) -> str:
        """What the process printed (for assertion messages)."""
        return self._log.read_text(errors="replace")


@pytest.fixture(scope="session")
def purple_agent(
    mcp_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[AgentProcess]:
    log = tmp_path_factory.mktemp("logs") / "purple_agent.log"
    args = ["--mcp-url", mcp_server.mcp_url]
    with AgentProcess("services.purple_agent", args, "/readyz", log) as agent:
        yield agent


@pytest.fixture(scope="session")
def green_agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[AgentProcess]:
    log = tmp_path_factory.mktemp("logs") / "green_agent.log"
    with AgentProcess("services.green_agent", ["serve"], "/healthz", log) as agent:
        yield agent
