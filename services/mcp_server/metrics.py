"""Prometheus metrics of the MCP server (the frame adds ``mcp_http_request_duration_seconds``).

Every labelled series is created at import, at 0: ``rate()`` and ``increase()`` see the first
failure only if the series existed before it.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from services.telemetry.metrics import LATENCY_BUCKETS

ENCODE_SECONDS = Histogram(
    "mcp_encode_duration_seconds",
    "Query encoding (dense + sparse) latency per search, its wait for a model pass included.",
    buckets=LATENCY_BUCKETS,
)
ENCODE_BATCH = Histogram(
    "mcp_encode_batch_queries",
    "Queries encoded together in one model pass (those waiting at once share it).",
    buckets=(1, 2, 3, 4, 6, 8, 12, 16, 24, 32),
)
RANK_BATCH = Histogram(
    "mcp_rank_batch_queries",
    "Searches ranked together in one pass (those waiting for a thread at once share it).",
    buckets=(1, 2, 3, 4, 6, 8, 12, 16, 24, 32),
)
STORE_SECONDS = Histogram(
    "mcp_store_query_duration_seconds",
    "Time one search spends in store (Qdrant) calls, all of them summed (in a ranking pass of "
    "several searches, its share of the pass's).",
    buckets=LATENCY_BUCKETS,
)
RANKING_SECONDS = Histogram(
    "mcp_ranking_duration_seconds",
    "Time one search spends ranking outside the store: fusion, feedback, kNN votes, features "
    "and the model (in a ranking pass of several searches, its share of the pass's).",
    buckets=LATENCY_BUCKETS,
)
STORE_CALL_SECONDS = Histogram(
    "mcp_store_call_duration_seconds",
    "Latency of one store (Qdrant) call, by operation.",
    ["operation"],
    buckets=LATENCY_BUCKETS,
)
SEARCHES = Counter(
    "mcp_searches_total", "Searches served, by entry point and outcome.", ["via", "outcome"]
)
INDEX_DOCUMENTS = Gauge(
    "mcp_index_documents",
    "Documents in the collection the server reads, as its last readiness check found (0: "
    "missing or empty).",
    multiprocess_mode="max",
)
CACHE_LOOKUPS = Counter(
    "mcp_result_cache_lookups_total",
    "Searches looked up in the result cache, by result (hit: answered without searching). "
    "Stays at 0 while the cache is off (MCP_RESULT_CACHE_ENTRIES=0).",
    ["result"],
)
CACHE_ENTRIES = Gauge(
    "mcp_result_cache_entries", "Answers held in the result cache.", multiprocess_mode="livesum"
)
CACHE_BYTES = Gauge(
    "mcp_result_cache_bytes",
    "Estimated memory the result cache's answers hold (bounded by MCP_RESULT_CACHE_BYTES).",
    multiprocess_mode="livesum",
)
SEARCH_OUTCOMES = ("ok", "store_error", "abandoned")
STORE_OPERATIONS = (
    "search", "fused_search", "score_points", "retrieve", "scroll", "count", "resolve_alias",
)  # fmt: skip

for _via in ("tool", "rest"):
    for _outcome in SEARCH_OUTCOMES:
        SEARCHES.labels(_via, _outcome)
for _result in ("hit", "miss"):
    CACHE_LOOKUPS.labels(_result)
for _operation in STORE_OPERATIONS:
    STORE_CALL_SECONDS.labels(_operation)


def observe_store_call(operation: str, seconds: float) -> None:
    """The ``observe`` of the server's :class:`CountingStore`."""
    STORE_CALL_SECONDS.labels(operation).observe(seconds)
