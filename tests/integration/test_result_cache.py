"""The result cache through real servers: a cached answer is the answer, and is counted.

Two MCP servers over one index, one caching (``MCP_RESULT_CACHE_ENTRIES=64``) and one not
(``0``, what the benchmarks run): the same questions get the same bytes from both, whether the
caching one searched or answered from its cache, over REST and over MCP.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from mcp import Client

from harness.processes import ServerProcess
from services.nfcorpus.dataset import load_queries
from tests.support.small_index import SmallIndex


def _server(small_index: SmallIndex, tmp: pytest.TempPathFactory, entries: int) -> ServerProcess:
    env = {**small_index.env(private_copy=True), "MCP_RESULT_CACHE_ENTRIES": str(entries)}
    log = tmp.mktemp("logs") / f"mcp_cache_{entries}.log"
    return ServerProcess.module("services.mcp_server", env=env, log_path=log)


@pytest.fixture(scope="module")
def cached(small_index: SmallIndex, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with _server(small_index, tmp_path_factory, 64) as server:
        yield server


@pytest.fixture(scope="module")
def uncached(small_index: SmallIndex, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    with _server(small_index, tmp_path_factory, 0) as server:
        yield server


@pytest.fixture(scope="module")
def questions(small_index: SmallIndex) -> list[str]:
    queries = load_queries(small_index.settings.data_dir)
    return [queries[q] for q in small_index.query_ids[5:8]]


def _lookups(metrics: str) -> dict[str, float]:
    found = re.findall(r'^mcp_result_cache_lookups_total\{result="(\w+)"\} (\S+)$', metrics, re.M)
    return {result: float(n) for result, n in found}


def _gauge(metrics: str, name: str) -> float:
    return float(re.findall(rf"^{name} (\S+)$", metrics, re.M)[0])


def _metrics(server: ServerProcess) -> str:
    return httpx.get(server.base_url + "/metrics").text


async def _metrics_async(http: httpx.AsyncClient, server: ServerProcess) -> str:
    return (await http.get(server.base_url + "/metrics")).text


@pytest.mark.parametrize("include_text", [True, False])
def test_rest_answers_from_the_cache_equal_fresh_ones(
    cached: ServerProcess, uncached: ServerProcess, questions: list[str], include_text: bool
) -> None:
    for query in questions:
        body = {"query": query, "top_k": 7, "include_text": include_text}
        fresh = httpx.post(uncached.base_url + "/search_nfcorpus", json=body)
        before = _lookups(_metrics(cached))
        first = httpx.post(cached.base_url + "/search_nfcorpus", json=body)
        again = httpx.post(cached.base_url + "/search_nfcorpus", json=body)
        after = _lookups(_metrics(cached))
        assert after["miss"] - before["miss"] == 1 and after["hit"] - before["hit"] == 1
        assert fresh.status_code == first.status_code == again.status_code == 200
        assert fresh.content == first.content == again.content
        assert fresh.headers["content-type"] == again.headers["content-type"]
        assert len(again.json()["results"]) == 7


async def test_tool_answers_from_the_cache_equal_fresh_ones(
    cached: ServerProcess, uncached: ServerProcess, questions: list[str]
) -> None:
    arguments = {"query": questions[0] + " diet", "top_k": 4}
    async with Client(uncached.base_url + "/mcp") as client:
        fresh = await client.call_tool("search_nfcorpus", arguments)
    async with Client(cached.base_url + "/mcp") as client:
        first = await client.call_tool("search_nfcorpus", arguments)
        again = await client.call_tool("search_nfcorpus", arguments)
    assert not fresh.is_error and not first.is_error and not again.is_error
    assert fresh.structured_content == first.structured_content == again.structured_content
    assert fresh.content == first.content == again.content
    # The tool and REST share answers: the same question over REST is a hit.
    async with httpx.AsyncClient() as http:
        before = _lookups(await _metrics_async(http, cached))
        rest = await http.post(cached.base_url + "/search_nfcorpus", json=arguments)
        assert _lookups(await _metrics_async(http, cached))["hit"] == before["hit"] + 1
    assert rest.json() == fresh.structured_content


async def test_every_search_is_counted_and_a_hit_calls_no_store(
    cached: ServerProcess, uncached: ServerProcess
) -> None:
    async with httpx.AsyncClient(base_url=cached.base_url) as http:
        await http.post("/stats/reset")
        body = {"query": "omega-3 fatty acids and depression", "top_k": 3}
        await http.post("/search_nfcorpus", json=body)
        store_calls = (await http.get("/health_check")).json()["qdrant_calls_total"]
        async with Client(cached.base_url + "/mcp") as client:
            await client.call_tool("search_nfcorpus", body)
        await http.post("/search_nfcorpus", json=body)
        assert (await http.get("/stats")).json() == {"search_call_count": 3}
        assert (await http.get("/health_check")).json()["qdrant_calls_total"] == store_calls > 0
        metrics = await _metrics_async(http, cached)
        assert _gauge(metrics, "mcp_result_cache_entries") >= 1
        assert _gauge(metrics, "mcp_result_cache_bytes") > 1000
        # Switched off: nothing is looked up or kept, and the series are there at 0 all the same.
        await http.post(uncached.base_url + "/search_nfcorpus", json=body)
        await http.post(uncached.base_url + "/search_nfcorpus", json=body)
        metrics = await _metrics_async(http, uncached)
    assert _lookups(metrics) == {"hit": 0.0, "miss": 0.0}
    assert _gauge(metrics, "mcp_result_cache_entries") == 0
