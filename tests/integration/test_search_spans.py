"""One search's trace: encode, then retrieve with a span per ranking stage and per store call
beneath it; the store and ranking times are told apart in the metrics."""

from __future__ import annotations

import asyncio
from typing import Any

from prometheus_client import REGISTRY

from services.mcp_server.metrics import observe_store_call
from services.mcp_server.schemas import SearchRequest
from services.mcp_server.service import SearchService
from services.retrieval.query.pipeline import RankingPipeline
from services.retrieval.store import open_store
from services.retrieval.store.counting import CountingStore
from tests.support.small_index import SmallIndex
from tests.support.tracing import collected_spans


def _request(query: str) -> SearchRequest:
    return SearchRequest(query=query, top_k=5)


def _sample(name: str, **labels: str) -> float:
    return REGISTRY.get_sample_value(name, labels) or 0.0


async def test_a_search_traces_every_store_call_under_retrieve(
    small_index: SmallIndex, encoder: Any
) -> None:
    settings = small_index.settings.updated(store={"edge_private_copy": True})
    store = CountingStore(open_store(settings.store), observe=observe_store_call)
    try:
        service = SearchService(RankingPipeline(store, encoder, settings), store, threads=1)
        ranking_before = _sample("mcp_ranking_duration_seconds_count")
        calls_before = _sample("mcp_store_call_duration_seconds_count", operation="search")
        with collected_spans() as exporter:
            hits = await service.search(_request("vitamin D and bone fractures"), via="rest")
        spans = exporter.get_finished_spans()
    finally:
        store.close()
    assert len(hits) == 5
    by_name = {s.name: s for s in spans}
    search, retrieve = by_name["search"], by_name["retrieve"]
    assert by_name["encode"].parent.span_id == search.context.span_id  # type: ignore[union-attr]
    assert retrieve.parent.span_id == search.context.span_id  # type: ignore[union-attr]
    parents = {s.context.span_id: s.parent.span_id if s.parent else None for s in spans}

    def under_retrieve(span_id: int | None) -> bool:
        while span_id is not None:
            if span_id == retrieve.context.span_id:
                return True
            span_id = parents.get(span_id)
        return False

    # The ranking stages, each a span of its own under retrieve (the small index is supervised).
    for stage in ("gather evidence", "rm3 feedback", "knn neighbours", "knn votes"):
        assert under_retrieve(by_name[stage].context.span_id), stage
    for stage in ("build features", "score model"):
        assert by_name[stage].parent.span_id == retrieve.context.span_id  # type: ignore[union-attr]
    store_spans = [s for s in spans if s.name.startswith("store.")]
    assert len(store_spans) >= 3  # candidates, feedback, kNN, payloads
    for span in store_spans:
        assert under_retrieve(span.context.span_id)
        assert span.context.trace_id == search.context.trace_id
        assert span.attributes and span.attributes["db.operation.name"] == span.name[6:]
    assert under_retrieve(by_name["rm3 feedback"].context.span_id)
    assert _sample("mcp_ranking_duration_seconds_count") == ranking_before + 1
    searches = sum(1 for s in store_spans if s.name == "store.search")
    after = _sample("mcp_store_call_duration_seconds_count", operation="search")
    assert after == calls_before + searches


async def test_a_ranking_pass_of_several_searches_links_them_all(
    small_index: SmallIndex, encoder: Any
) -> None:
    settings = small_index.settings.updated(store={"edge_private_copy": True})
    store = CountingStore(open_store(settings.store), observe=observe_store_call)
    texts = ["vitamin D and bone fractures", "soy", "green tea", "BPA", "red meat and cancer"]
    try:
        pipeline = RankingPipeline(store, encoder, settings)
        service = SearchService(pipeline, store, threads=1, encode_batch=8, rank_batch=8)
        alone = [await service.search(_request(t), via="rest") for t in texts]
        with collected_spans() as exporter:
            # One thread: the first search takes it, the others wait and share the next passes.
            together = await asyncio.gather(
                *(service.search(_request(t), via="rest") for t in texts)
            )
        spans = exporter.get_finished_spans()
    finally:
        store.close()
    assert list(together) == alone
    searches = {s.context.span_id: s for s in spans if s.name == "search"}
    passes = [s for s in spans if s.name == "retrieve"]
    batch = {s.context.span_id: int((s.attributes or {}).get("search.batch", 1)) for s in passes}  # type: ignore[arg-type]
    batched = [s for s in passes if batch[s.context.span_id] > 1]
    assert batched and len(passes) < len(texts)
    for p in batched:
        # In its first caller's trace, linked to every other search it ranked.
        assert p.parent is not None and p.parent.span_id in searches
        linked = [link.context.span_id for link in p.links]
        assert len(linked) == batch[p.context.span_id] - 1
        assert all(span_id in searches for span_id in linked)
