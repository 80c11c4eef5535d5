"""The purple agent's search client finds its backend by what the server speaks.

Our MCP server at any URL form, the seed's REST-only server, a handshake-era MCP server, a
protocol forced by setting, a server replaced by another kind while the agent runs, and an
error the REST wire reports inside an HTTP 200.
"""

from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from harness.fakes.mcp_toy import search_app, serve_app, serving
from harness.fakes.seed_rest import fixed_hits, forwarding_to, seed_rest_app
from harness.processes import McpServer, free_port
from services.purple_agent.search import McpCallError, SearchClient, probes
from services.purple_agent.settings import PurpleSettings
from tests.support.ports import closed_url
from tests.support.purple import ThreadedServer, v03_body

QUERIES = ["vitamin D and bone health", "statins breast cancer", "green tea"]
HITS = [{"doc_id": f"MED-{i}", "score": 1.0 / i, "title": "t", "text": "x"} for i in range(1, 9)]


def _client(url: str, **options: object) -> SearchClient:
    settings: dict[str, object] = {
        "timeout_s": 10,
        "retries": 2,
        "backoff_s": 0.01,
        "max_connections": 4,
    }
    return SearchClient(url, **{**settings, **options})  # type: ignore[arg-type]


async def _ids(client: SearchClient, query: str, top_k: int = 5) -> list[str]:
    return [c.doc_id for c in await client.search(query, top_k, time.monotonic() + 20)]


def test_the_probes_follow_the_url_forms() -> None:
    assert probes("http://h:8000") == [
        ("mcp", "http://h:8000/mcp"),
        ("rest", "http://h:8000/search_nfcorpus"),
    ]
    assert probes("http://h:8000/mcp") == probes("http://h:8000/") == probes("http://h:8000")
    assert probes("http://h/api") == [
        ("mcp", "http://h/api"),
        ("mcp", "http://h/api/mcp"),
        ("rest", "http://h/api/search_nfcorpus"),
    ]
    assert probes("http://h/api/search_nfcorpus", "rest") == [
        ("rest", "http://h/api/search_nfcorpus")
    ]
    assert probes("http://h:8000", "mcp") == [("mcp", "http://h:8000/mcp")]


@pytest.mark.parametrize("form", ["base", "base/", "mcp"])
async def test_our_server_is_found_at_every_url_form(mcp_server: McpServer, form: str) -> None:
    url = {"base": "", "base/": "/", "mcp": "/mcp"}[form]
    client = _client(mcp_server.base_url + url)
    try:
        ids = await _ids(client, QUERIES[0])
        assert client.backend is not None
        assert (client.backend.kind, client.backend.url) == ("mcp", mcp_server.mcp_url)
    finally:
        await client.aclose()
    assert len(ids) == 5


async def test_a_rest_only_server_gives_the_same_rankings_as_mcp(mcp_server: McpServer) -> None:
    mcp = _client(mcp_server.mcp_url)
    with serve_app(seed_rest_app(forwarding_to(mcp_server.base_url))) as base:
        rest = _client(base)
        try:
            for query in QUERIES:
                assert await _ids(rest, query, 10) == await _ids(mcp, query, 10)
            assert rest.backend is not None
            assert (rest.backend.kind, rest.backend.url) == ("rest", base + "/search_nfcorpus")
            assert await rest.ready(5) == (True, f"rest at {base}/search_nfcorpus")
        finally:
            await rest.aclose()
            await mcp.aclose()


async def test_an_error_inside_http_200_fails_that_search_with_its_message() -> None:
    with serve_app(seed_rest_app(fixed_hits(HITS))) as base:
        client = _client(base)
        try:
            with pytest.raises(McpCallError) as failed:
                await _ids(client, "boom")
            after = await _ids(client, "fine", 3)
        finally:
            await client.aclose()
    assert failed.value.reason == "mcp_tool_error"
    assert not failed.value.retryable
    assert "Search failed: Qdrant is unreachable" in str(failed.value)
    assert after == ["MED-1", "MED-2", "MED-3"]


async def test_a_handshake_era_server_is_found_from_its_base_url() -> None:
    with serving(search_app(json_response=False, handshake_only=True)) as mcp_url:
        client = _client(mcp_url.removesuffix("/mcp"))
        try:
            assert await _ids(client, "q", 3) == ["MED-1", "MED-2", "MED-3"]
            assert client.backend is not None and client.backend.kind == "mcp_sdk"
        finally:
            await client.aclose()


async def test_a_forced_protocol_is_the_only_one_tried(mcp_server: McpServer) -> None:
    rest = _client(mcp_server.base_url, protocol="rest")
    try:
        assert len(await _ids(rest, QUERIES[1])) == 5
        assert rest.backend is not None and rest.backend.kind == "rest"
    finally:
        await rest.aclose()
    with serve_app(seed_rest_app(fixed_hits(HITS))) as base:
        mcp_only = _client(base, protocol="mcp")
        try:
            with pytest.raises(McpCallError) as failed:
                await _ids(mcp_only, "q")
            ready, detail = await mcp_only.ready(5)
        finally:
            await mcp_only.aclose()
    assert failed.value.reason == "mcp_error"
    assert f"found no MCP at {base} (POST {base}/mcp answered HTTP 404)" in str(failed.value)
    assert not ready and "found no MCP" in detail


async def test_a_server_replaced_by_another_kind_is_found_again() -> None:
    with serving(search_app(json_response=True)) as mcp_url:
        client = _client(mcp_url.removesuffix("/mcp"))
        assert await _ids(client, "q", 2) == ["MED-1", "MED-2"]
        port = int(mcp_url.rsplit(":", 1)[1].split("/")[0])
    try:
        assert client.backend is not None and client.backend.kind == "mcp"
        # The same address now runs the seed's REST server: the next search finds it.
        with serve_app(seed_rest_app(fixed_hits(HITS[3:])), port=port):
            assert await _ids(client, "q", 2) == ["MED-4", "MED-5"]
            assert client.backend is not None and client.backend.kind == "rest"
    finally:
        await client.aclose()


async def test_nothing_listening_is_unready_and_unavailable() -> None:
    with closed_url("") as nobody:
        client = _client(nobody, retries=0)
        try:
            ready, detail = await client.ready(2)
            with pytest.raises(McpCallError) as failed:
                await _ids(client, "q")
        finally:
            await client.aclose()
    assert not ready and "unreachable" in detail
    assert failed.value.reason == "mcp_unavailable"


async def test_the_agent_is_unready_until_its_search_server_answers() -> None:
    port = free_port()
    settings = PurpleSettings(mcp_url=f"http://127.0.0.1:{port}", deadline_s=10)
    async with httpx.AsyncClient(timeout=30) as http:
        with ThreadedServer(settings) as purple:
            before = await http.get(purple.url + "/readyz")
            # Pods start in any order: the search server comes up after the agent.
            with serve_app(seed_rest_app(fixed_hits(HITS)), port=port):
                ready = await _poll_ready(http, purple.url + "/readyz")
                reply = await http.post(purple.url + "/", json=v03_body("Is fish oil good?"))
                metrics = (await http.get(purple.url + "/metrics")).text
    assert before.status_code == 503 and "unreachable" in before.json()["mcp"]
    assert ready == {"status": "ready", "mcp": f"rest at http://127.0.0.1:{port}/search_nfcorpus"}
    task = reply.json()["result"]
    assert task["status"]["state"] == "completed"
    assert task["artifacts"][0]["parts"][0]["data"]["doc_ids"] == [h["doc_id"] for h in HITS[:5]]
    assert 'purple_search_backend{backend="rest"} 1.0' in metrics
    assert 'purple_search_backend{backend="mcp"} 0.0' in metrics


async def _poll_ready(http: httpx.AsyncClient, url: str, timeout_s: float = 15) -> object:
    deadline = time.monotonic() + timeout_s
    while True:
        answer = await http.get(url)
        if answer.status_code == 200 or time.monotonic() > deadline:
            return answer.json()
        await asyncio.sleep(0.1)
