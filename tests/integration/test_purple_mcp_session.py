"""The purple agent's MCP client against real MCP servers of the SDK: one negotiation, then each
call a single POST, answered as JSON or as an SSE stream; a broken answer fails only its call.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator

import pytest

from harness.fakes.mcp_toy import GARBAGE, Recorder, search_app, serving
from services.purple_agent.search import SearchClient
from services.purple_agent.search.backend import McpCallError


@pytest.fixture(params=[True, False], ids=["json", "sse"])
def mcp_url(request: pytest.FixtureRequest) -> Iterator[tuple[str, Recorder]]:
    app = search_app(json_response=request.param)
    with serving(app) as url:
        yield url, app


def _client(url: str) -> SearchClient:
    return SearchClient(url, timeout_s=5, retries=0, backoff_s=0.01, max_connections=4)


async def test_one_negotiation_then_one_post_per_call(mcp_url: tuple[str, Recorder]) -> None:
    url, server = mcp_url
    client = _client(url)
    try:
        answers = await asyncio.gather(
            *(client.search(f"q{i}", 3, time.monotonic() + 5) for i in range(8))
        )
    finally:
        await client.aclose()
    assert all([c.doc_id for c in hits] == ["MED-1", "MED-2", "MED-3"] for hits in answers)
    assert server.seen == ["server/discover", "tools/list", *["tools/call"] * 8]


async def test_a_tool_error_fails_its_call_only(mcp_url: tuple[str, Recorder]) -> None:
    url, _ = mcp_url
    client = _client(url)
    try:
        with pytest.raises(McpCallError) as failed:
            await client.search("boom", 3, time.monotonic() + 5)
        hits = await client.search("fine", 2, time.monotonic() + 5)
    finally:
        await client.aclose()
    assert failed.value.reason == "mcp_tool_error"
    assert "the index is on fire" in str(failed.value)
    assert len(hits) == 2


async def test_an_answer_that_is_not_json_rpc_fails_its_call_only(
    mcp_url: tuple[str, Recorder],
) -> None:
    url, _ = mcp_url
    client = _client(url)
    try:
        with pytest.raises(McpCallError) as failed:
            await client.search(GARBAGE, 3, time.monotonic() + 5)
        hits = await client.search("fine", 2, time.monotonic() + 5)
    finally:
        await client.aclose()
    assert failed.value.reason == "mcp_bad_response"
    assert len(hits) == 2
