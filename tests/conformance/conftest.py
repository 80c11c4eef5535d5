"""The agent under test: the one ``--agent-url`` names, or our own stack started for the suite.

``make conformance URL=http://host:port/`` checks any A2A retrieval agent; plain ``pytest`` (CI)
starts our MCP server on the suite's small index and our purple agent in front of it.

The test queries and the valid ids come from the green agent's data setting, ``GREEN_DATA_DIR``
(default ``../shared/data/nfcorpus``): a folder with no corpus is filled from the BEIR archive
(``GREEN_DOWNLOAD_URL``, its md5 ``GREEN_DOWNLOAD_MD5`` checked), so the suite runs on a connected
machine with nothing prepared; ``make test-image`` points it at the files the image carries.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from harness.processes import ServerProcess
from services.green_agent.evaluation.dataset import TestSet, fetch_test_set
from services.green_agent.settings import GreenSettings


@pytest.fixture(scope="session")
def agent_url(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    given = request.config.getoption("--agent-url")
    if given:
        yield str(given)
        return
    mcp = request.getfixturevalue("mcp_server")
    log = tmp_path_factory.mktemp("conformance") / "purple.log"
    with ServerProcess.module(
        "services.purple_agent", ["--mcp-url", mcp.base_url], log_path=log
    ) as agent:  # the base URL, as the seed gives it: the agent finds the MCP endpoint
        yield agent.base_url + "/"


@pytest.fixture(scope="session")
def card(agent_url: str) -> dict[str, Any]:
    answer = httpx.get(agent_url.rstrip("/") + "/.well-known/agent-card.json", timeout=30)
    assert answer.status_code == 200, f"no agent card at {agent_url}: {answer.status_code}"
    return dict(answer.json())


@pytest.fixture(scope="session")
def rpc_url(card: dict[str, Any]) -> str:
    """Where a 0.3 client sends its requests: the card's ``url``."""
    assert isinstance(card.get("url"), str), "the card has no url (a 0.3 client needs one)"
    return str(card["url"])


@pytest.fixture(scope="session")
def test_set() -> TestSet:
    settings = GreenSettings()
    return fetch_test_set(settings.data_dir, settings.download_url, settings.download_md5)
