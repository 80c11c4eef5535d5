"""The search service behind both entry points (MCP tool and REST): timing, tracing, counters.

Searches are CPU-bound (the model) and the store client is synchronous, so each stage runs in a
worker thread; a capacity limiter keeps no more of them in flight than there are cores to run
them, so queueing happens in the event loop instead of as thread contention. A search that finds
the service idle is encoded and ranked in one thread. Under load queries are encoded by an
:class:`~services.mcp_server.batching.EncodeBatcher` (those waiting together share one model
pass), then ranked in passes too: the searches waiting for a thread together go through
:meth:`~services.retrieval.query.pipeline.RankingPipeline.rank_many` at once (their store
searches in the same calls, one model pass), each to the answer it gets alone. A search whose
caller has gone while it waited is never ranked. Answers are kept in a
:class:`~services.mcp_server.cache.ResultCache`: a query asked again is answered on the event
loop, without a thread or a search, and still counted as a search.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Literal

import anyio
from opentelemetry import trace

from services.mcp_server.batching import EncodeBatcher, PassBatcher
from services.mcp_server.cache import Key, ResultCache
from services.mcp_server.metrics import (
    CACHE_BYTES,
    CACHE_ENTRIES,
    CACHE_LOOKUPS,
    ENCODE_SECONDS,
    INDEX_DOCUMENTS,
    RANK_BATCH,
    RANKING_SECONDS,
    SEARCHES,
    STORE_SECONDS,
)
from services.mcp_server.schemas import SearchHits, SearchRequest
from services.retrieval.query.pipeline import RankAsk, RankingPipeline
from services.retrieval.store.base import StoreError
from services.retrieval.store.counting import CountingStore
from services.telemetry import exemplars
from services.telemetry.http import annotate, query_prefix
from services.telemetry.tracing import stage, tracer

_tracer = tracer(__name__)


@contextmanager
def _encoding() -> Iterator[None]:
    """The span and the latency of one query's encoding, wherever it runs."""
    began = time.perf_counter()
    with stage(_tracer, "encode"):
        yield
    exemplars.observe(ENCODE_SECONDS, time.perf_counter() - began)


@dataclass(frozen=True, slots=True)
class _ToRank:
    """One encoded search waiting for a ranking pass; ``started`` is set once one takes it."""

    ask: RankAsk
    key: Key
    started: threading.Event
    # The caller's span: a pass that ranks it with others links to it from the pass's trace.
    caller: trace.SpanContext = field(
        default_factory=lambda: trace.get_current_span().get_span_context()
    )


class SearchUnavailableError(RuntimeError):
    """The store could not answer; the message is safe to show to a caller."""


class SearchService:
    """Runs searches and keeps the counters the AgentBeats evaluator reads."""

    def __init__(
        self,
        searcher: RankingPipeline,
        store: CountingStore,
        threads: int,
        cache: ResultCache | None = None,
        encode_batch: int = 1,
        encode_wait_s: float = 0.0,
        rank_batch: int = 1,
    ) -> None:
        """Wrap a searcher over ``store``; ``threads`` bounds the stages running at once.

        Without a ``cache`` every search is run. ``encode_batch`` queries at most share a
        model pass, the first waiting ``encode_wait_s`` for others; ``rank_batch`` searches at
        most share a ranking pass (they never wait for company).
        """
        self._searcher = searcher
        self._store = store
        self._cache = cache or ResultCache(0, 0)
        self._limiter = anyio.CapacityLimiter(threads)
        self.encoder = EncodeBatcher(
            searcher.encode_many, self._limiter, encode_batch, encode_wait_s
        )
        self.ranks: PassBatcher[_ToRank, SearchHits] = PassBatcher(
            self._rank_sync, self._limiter, rank_batch, 0.0, threads, RANK_BATCH.observe
        )
        self._lock = threading.Lock()
        self.search_calls = 0

    @property
    def store_calls(self) -> int:
        """Calls made to the store (each search makes several)."""
        return self._store.calls

    def reset_stats(self) -> None:
        """Zero the evaluator-facing counters."""
        with self._lock:
            self.search_calls = 0
        self._store.reset()

    def _rank_sync(self, searches: Sequence[_ToRank]) -> list[SearchHits]:
        """Rank ``searches`` in one pass (in a worker thread), keeping each answer in the cache.

        The store's and the ranking's time are observed per search: in a pass of several, each
        search observes its share.
        """
        for s in searches:
            s.started.set()
        started = time.perf_counter()
        self._store.start_timing()
        # A pass runs in its first caller's trace and links the others' searches to it.
        links = [trace.Link(s.caller) for s in searches[1:] if s.caller.is_valid]
        with stage(_tracer, "retrieve", links=links) as span:  # store calls inside
            results = self._searcher.rank_many([s.ask for s in searches])
            span.set_attribute("search.results", sum(len(r) for r in results))
            if len(searches) > 1:
                span.set_attribute("search.batch", len(searches))
        n = len(searches)
        store_s = self._store.thread_seconds
        ranking_s = max(0.0, time.perf_counter() - started - store_s)
        answers = []
        for s, ranked in zip(searches, results, strict=True):
            exemplars.observe(STORE_SECONDS, store_s / n)
            exemplars.observe(RANKING_SECONDS, ranking_s / n)
            hits: SearchHits = tuple(ranked)  # the core's documents are the wire's hits
            self._keep(s.key, hits)
            answers.append(hits)
        return answers

    async def search(self, request: SearchRequest, via: Literal["tool", "rest"]) -> SearchHits:
        """Search, counting the call; raises :class:`SearchUnavailableError` on store failure.

        Without ``request.include_text`` every hit's ``text`` is empty: the caller needs no
        abstract.
        """
        with self._lock:
            self.search_calls += 1
        query, top_k, include_text = request.query, request.top_k, request.include_text
        annotate(via=via, top_k=top_k, query=query_prefix(query), include_text=include_text)
        key: Key = (self._searcher.collection, query, top_k, include_text)
        if self._cache.enabled:
            cached = self._cache.get(key)
            CACHE_LOOKUPS.labels("miss" if cached is None else "hit").inc()
            annotate(cache="miss" if cached is None else "hit")
            if cached is not None:
                SEARCHES.labels(via, "ok").inc()
                return cached
        started = threading.Event()

        def alone() -> SearchHits:
            started.set()
            with _encoding():
                encoded = self.encoder.encode_here(query)
            ask = RankAsk(encoded, top_k, include_text)
            (hits,) = self._rank_sync([_ToRank(ask, key, started)])
            self.ranks.counted(1)  # a ranking pass of one
            return hits

        try:
            with _tracer.start_as_current_span("search") as span:
                span.set_attribute("search.top_k", top_k)
                # A thread free and nothing to share: encode and rank alone, in one thread.
                # Otherwise wait with the others, whose queries share a model pass, then a
                # ranking pass.
                if self._thread_taken():
                    try:  # the thread's token is this request's already: no limiter again
                        hits = await anyio.to_thread.run_sync(alone)
                    finally:
                        self._limiter.release()
                else:
                    with _encoding():
                        encoded = await self.encoder.encode(query)
                    ask = RankAsk(encoded, top_k, include_text)
                    hits = await self.ranks.submit(_ToRank(ask, key, started))
        except anyio.get_cancelled_exc_class():
            # The caller went away (see services.common.disconnect): a search still waiting for
            # a thread is dropped; one that ran is counted as done, its answer unsent.
            SEARCHES.labels(via, "ok" if started.is_set() else "abandoned").inc()
            raise
        except StoreError as e:
            SEARCHES.labels(via, "store_error").inc()
            annotate(reason="store_error")
            raise SearchUnavailableError(f"search backend unavailable: {e}") from e
        SEARCHES.labels(via, "ok").inc()
        return hits

    def _thread_taken(self) -> bool:
        """Take a thread's token for a search alone, if one is free and nothing is encoding.

        Taken here, without a yield: requests that arrive together (a burst) cannot all see the
        same free thread and all go alone; the ones after the first wait and share passes.
        """
        if not self.encoder.idle:
            return False
        try:
            self._limiter.acquire_nowait()
        except anyio.WouldBlock:
            return False
        return True

    def _keep(self, key: Key, hits: SearchHits) -> None:
        """Cache an answer, unless the index version changed while it was searched for.

        Kept even when its caller has gone meanwhile: the work is done, the next caller gets it.
        """
        if not self._cache.enabled or self._searcher.collection != key[0]:
            return
        self._cache.put(key, hits)
        self._cache_gauges()

    def _cache_gauges(self) -> None:
        CACHE_ENTRIES.set(self._cache.entries)
        CACHE_BYTES.set(self._cache.bytes)

    def _check_ready(self) -> tuple[bool, str]:
        try:
            collection = self._searcher.refresh()
            points = self._store.count(collection)
        except StoreError as e:
            INDEX_DOCUMENTS.set(0)
            return False, f"store unreachable: {e}"
        if self._cache.enabled:  # a new index version: the old answers go at once
            self._cache.retain(collection)
            self._cache_gauges()
        INDEX_DOCUMENTS.set(points)
        if points == 0:
            return False, f"collection {collection} is empty"
        return True, f"collection {collection} holds {points} documents"

    async def ready(self) -> tuple[bool, str]:
        """Whether the store answers and the collection is populated."""
        return await anyio.to_thread.run_sync(self._check_ready)
