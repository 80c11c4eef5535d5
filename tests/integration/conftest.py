"""Integration fixtures: the purple agent in-process in front of the real MCP server."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import httpx
import pytest

from services.purple_agent.settings import PurpleSettings
from tests.support.purple import ThreadedServer


@pytest.fixture(scope="module")
def purple(mcp_server: Any) -> Iterator[ThreadedServer]:
    with ThreadedServer(PurpleSettings(mcp_url=mcp_server.mcp_url, deadline_s=10)) as server:
        yield server


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient(timeout=30) as client:
        yield client
