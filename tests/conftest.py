"""Fixtures shared by the suites: a small real index and the real MCP server over it."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from devtools.processes import ServerProcess
from services.retrieval.build.index import build_index
from services.retrieval.encoders.dense import OnnxMiniLM
from services.retrieval.settings import ExperimentSettings, RetrievalSettings, StoreSettings
from services.retrieval.store import open_store
from tests.support.dataset import make_subset


def pytest_addoption(parser: pytest.Parser) -> None:
    # Here, not in tests/conformance: options count only in the conftest pytest starts from.
    parser.addoption(
        "--agent-url",
        default=None,
        help="conformance suite: the A2A agent to check (default: start our own stack)",
    )


@dataclass(frozen=True)
class SmallIndex:
    """A BEIR folder with an NFCorpus slice, indexed into an embedded store."""

    settings: RetrievalSettings
    query_ids: list[str]

    def env(self, private_copy: bool = False) -> dict[str, str]:
        """Settings of a server over this index; a second server needs a private copy (the
        suite's shared MCP server holds the shard itself open)."""
        s = self.settings
        return {
            "RETRIEVAL_DATA_DIR": str(s.data_dir),
            "RETRIEVAL_STORE": "edge",
            "RETRIEVAL_EDGE_PATH": str(s.store.edge_path),
            "RETRIEVAL_CACHE_DIR": str(s.cache_dir),
            "RETRIEVAL_EDGE_PRIVATE_COPY": str(private_copy).lower(),
        }


@pytest.fixture(scope="session")
def encoder() -> OnnxMiniLM:
    return OnnxMiniLM(threads=2)


@pytest.fixture(scope="session")
def small_index(tmp_path_factory: pytest.TempPathFactory, encoder: OnnxMiniLM) -> SmallIndex:
    root = tmp_path_factory.mktemp("small-index")
    query_ids = make_subset(root / "data")
    # The vector cache lives outside the repo and survives between runs (keyed by content).
    # A slice of the training queries keeps the ranker's training to seconds.
    settings = RetrievalSettings(
        data_dir=root / "data",
        store=StoreSettings(edge_path=root / "edge"),
        experiment=ExperimentSettings(max_train_queries=500),
    )
    store = open_store(settings.store)
    try:
        build_index(settings, store, encoder)
    finally:
        store.close()
    return SmallIndex(settings, query_ids)


class McpServer(ServerProcess):
    """The MCP server subprocess; ``mcp_url`` is its MCP endpoint."""

    @property
    def mcp_url(self) -> str:
        return self.base_url + "/mcp"


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
