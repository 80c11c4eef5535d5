"""Fixtures shared by the suites: a small real index and the real MCP server over it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.processes import McpServer
from services.retrieval.encoders.dense import OnnxMiniLM
from tests.support.small_index import SmallIndex, build_small_index


def pytest_addoption(parser: pytest.Parser) -> None:
    # Here, not in tests/conformance: options count only in the conftest pytest starts from.
    parser.addoption(
        "--agent-url",
        default=None,
        help="conformance suite: the A2A agent to check (default: start our own stack)",
    )


@pytest.fixture(scope="session")
def encoder() -> OnnxMiniLM:
    return OnnxMiniLM(threads=2)


@pytest.fixture(scope="session")
def small_index(tmp_path_factory: pytest.TempPathFactory, encoder: OnnxMiniLM) -> SmallIndex:
    return build_small_index(tmp_path_factory.mktemp("small-index"), encoder)


@pytest.fixture(scope="session")
def mcp_server(
    small_index: SmallIndex, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[McpServer]:
    log = tmp_path_factory.mktemp("logs") / "mcp_server.log"
    server = McpServer.module("services.mcp_server", env=small_index.env(), log_path=log)
    server.start()
    try:
        yield server
    finally:
        server.stop()
