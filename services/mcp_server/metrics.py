"""Prometheus metrics of the MCP server (the frame adds ``mcp_http_request_duration_seconds``)."""

from __future__ import annotations

from prometheus_client import Counter, Histogram

from services.telemetry.metrics import LATENCY_BUCKETS

ENCODE_SECONDS = Histogram(
    "mcp_encode_duration_seconds",
    "Query encoding (dense + sparse) latency.",
    buckets=LATENCY_BUCKETS,
)
STORE_SECONDS = Histogram(
    "mcp_store_query_duration_seconds",
    "Qdrant retrieval latency per search.",
    buckets=LATENCY_BUCKETS,
)
SEARCHES = Counter(
    "mcp_searches_total", "Searches served, by entry point and outcome.", ["via", "outcome"]
)
