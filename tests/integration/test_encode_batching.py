"""Concurrent searches through the real MCP server: they may share model passes and ranking
passes, and each gets the answer it gets alone.

The server runs without its result cache, so every request is searched. The queries are sent
one at a time, then all at once; the answers must be the same bytes, and the batch histograms
must account for every query encoded and ranked (whatever the machine made of the overlap).
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Iterator

import httpx
import pytest

from harness.processes import ServerProcess
from services.nfcorpus.dataset import load_queries
from tests.support.small_index import SmallIndex


@pytest.fixture(scope="module")
def server(
    small_index: SmallIndex, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    env = {**small_index.env(private_copy=True), "MCP_RESULT_CACHE_ENTRIES": "0"}
    log = tmp_path_factory.mktemp("logs") / "mcp_batching.log"
    with ServerProcess.module("services.mcp_server", env=env, log_path=log) as process:
        yield process


def _batched(metrics: str, stage: str = "encode") -> tuple[float, float]:
    """Queries handled and passes made by one stage (encode, rank), from its batch histogram."""
    total = re.findall(rf"^mcp_{stage}_batch_queries_sum (\S+)$", metrics, re.M)
    passes = re.findall(rf"^mcp_{stage}_batch_queries_count (\S+)$", metrics, re.M)
    return float(total[0]), float(passes[0])


async def test_concurrent_searches_get_the_answers_they_get_alone(
    server: ServerProcess, small_index: SmallIndex
) -> None:
    queries = load_queries(small_index.settings.data_dir)
    texts = [queries[q] for q in small_index.query_ids[:16]]
    url = server.base_url + "/search_nfcorpus"
    limits = httpx.Limits(max_connections=len(texts))
    async with httpx.AsyncClient(timeout=60, limits=limits) as http:
        alone = [(await http.post(url, json={"query": t, "top_k": 10})).content for t in texts]
        before = (await http.get(server.base_url + "/metrics")).text
        answers = await asyncio.gather(
            *(http.post(url, json={"query": t, "top_k": 10}) for t in texts)
        )
        after = (await http.get(server.base_url + "/metrics")).text
    assert [a.content for a in answers] == alone
    for stage in ("encode", "rank"):
        (queries_after, passes_after), (queries_before, passes_before) = (
            _batched(after, stage),
            _batched(before, stage),
        )
        assert queries_after - queries_before == len(texts), stage
        assert 1 <= passes_after - passes_before <= len(texts), stage
