"""End-to-end fixtures: the purple and green agents as real processes, started from their CLIs."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from harness.processes import ServerProcess
from tests.support.load_collector import collector_process


@pytest.fixture(scope="session")
def purple_agent(
    mcp_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    log = tmp_path_factory.mktemp("logs") / "purple_agent.log"
    agent = ServerProcess.module(
        "services.purple_agent", ["--mcp-url", mcp_server.mcp_url], log_path=log
    )
    agent.start(timeout_s=30)
    try:
        yield agent
    finally:
        agent.stop()


@pytest.fixture(scope="session")
def green_agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    log = tmp_path_factory.mktemp("logs") / "green_agent.log"
    agent = ServerProcess.module(
        "services.green_agent", ["serve"], ready_path="/healthz", log_path=log
    )
    agent.start(timeout_s=30)
    try:
        yield agent
    finally:
        agent.stop()


@pytest.fixture
def collector(tmp_path: Path) -> Iterator[tuple[ServerProcess, Path]]:
    server, out = collector_process(tmp_path)
    server.start(timeout_s=30)
    try:
        yield server, out
    finally:
        server.stop()
