"""Fuzzing fixtures: every server as its own process, so a crash shows, and the case budget.

``FUZZ_EXAMPLES`` sets the cases per test (CI keeps the default small; ``make fuzz`` runs at
least 1,000 per interface and writes the tally to ``FUZZ_REPORT``).
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from hypothesis import HealthCheck, settings

from harness.processes import McpServer, ServerProcess
from services.nfcorpus.dataset import load_corpus
from tests.fuzz.payloads import MCP_HEADERS
from tests.fuzz.verdict import Contract, Tally
from tests.support.ports import closed_url
from tests.support.small_index import SmallIndex

settings.register_profile(
    "fuzz",
    max_examples=int(os.environ.get("FUZZ_EXAMPLES", "60")),
    deadline=None,  # real servers on a shared machine: time is the benchmarks' business
    database=None,  # no example files in the checkout; failures print their reproduction
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    print_blob=True,
)
settings.load_profile("fuzz")


@pytest.fixture(scope="session")
def tally() -> Iterator[Tally]:
    counts = Tally()
    yield counts
    report = os.environ.get("FUZZ_REPORT")
    if report:
        Path(report).parent.mkdir(parents=True, exist_ok=True)
        Path(report).write_text(json.dumps(counts.as_dict(), indent=2) + "\n")


@pytest.fixture(scope="session")
def purple_process(
    mcp_server: McpServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    log = tmp_path_factory.mktemp("fuzz-logs") / "purple.log"
    env = {"PURPLE_MCP_URL": mcp_server.mcp_url, "PURPLE_DEADLINE_S": "20"}
    with ServerProcess.module("services.purple_agent", env=env, log_path=log) as server:
        yield server


@pytest.fixture(scope="session")
def green_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    log = tmp_path_factory.mktemp("fuzz-logs") / "green.log"
    with ServerProcess.module(
        "services.green_agent", ["serve"], ready_path="/healthz", log_path=log
    ) as server:
        yield server


@pytest.fixture(scope="session")
def contract(mcp_server: McpServer, small_index: SmallIndex) -> Contract:
    """The search tool's output schema as ``tools/list`` publishes it, and the indexed ids."""
    listing = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    answer = httpx.post(mcp_server.mcp_url, json=listing, headers=MCP_HEADERS, timeout=30).json()
    (tool,) = (t for t in answer["result"]["tools"] if t["name"] == "search_nfcorpus")
    ids = frozenset(doc.doc_id for doc in load_corpus(small_index.settings.data_dir))
    return Contract(tool["outputSchema"], ids)


@pytest.fixture(scope="session")
def nobody() -> Iterator[str]:
    """The URL of an agent that refuses every connection: a port closed by construction."""
    with closed_url() as url:
        yield url


@pytest.fixture(scope="session")
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=30) as http:
        yield http
