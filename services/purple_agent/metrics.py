"""Prometheus metrics of the purple agent (served at ``/metrics``).

Declared once per process at import time: the app factory may run several times in one process
(tests), and a metric registered twice is an error. Every labelled series is created at 0 here:
``rate()`` and ``increase()`` see the first failure only if its series existed before it.
"""

from __future__ import annotations

from prometheus_client import Counter, Gauge, Histogram

from services.telemetry.metrics import LATENCY_BUCKETS

REQUEST_SECONDS = Histogram(
    "purple_request_duration_seconds",
    "Time to answer one A2A retrieval request, by outcome (completed or failed).",
    ["outcome"],
    buckets=LATENCY_BUCKETS,
)
MCP_CALL_SECONDS = Histogram(
    "purple_mcp_call_duration_seconds",
    "Time of one MCP tool call attempt, by outcome (ok, tool_error, timeout, unavailable, error).",
    ["outcome"],
    buckets=LATENCY_BUCKETS,
)
IN_FLIGHT = Gauge(
    "purple_requests_in_flight",
    "A2A retrieval requests being answered now.",
    multiprocess_mode="livesum",
)
FAILURES = Counter(
    "purple_request_failures_total",
    "Requests answered with a failed task, by reason.",
    ["reason"],
)
BACKEND = Gauge(
    "purple_search_backend",
    "1 for the search backend in use (mcp, mcp_sdk or rest), 0 for the others.",
    ["backend"],
    multiprocess_mode="max",
)
REPAIRS = Counter(
    "purple_search_repairs_total",
    "Hits dropped from search answers, by kind (malformed_hit, invalid_id, duplicate).",
    ["kind"],
)
TASKS_STORED = Gauge(
    "purple_task_store_tasks",
    "Tasks the agent keeps for tasks/get (bounded by PURPLE_MAX_TASKS).",
    multiprocess_mode="livesum",
)
TASK_STORE_BYTES = Gauge(
    "purple_task_store_bytes",
    "Serialized size of the tasks kept (bounded by PURPLE_MAX_TASK_BYTES).",
    multiprocess_mode="livesum",
)
MCP_RETRIES = Counter(
    "purple_mcp_retries_total",
    "MCP tool call attempts repeated after an error that left no work running on the server.",
)

#: Why a request fails: the reasons of ``AgentFailure`` (``mcp_*`` from ``McpCallError``).
FAILURE_REASONS = (
    "invalid_request",
    "deadline",
    "internal",
    "mcp_tool_error",
    "mcp_overloaded",
    "mcp_unavailable",
    "mcp_timeout",
    "mcp_error",
    "mcp_bad_response",
)
#: The search backends (services.purple_agent.search): MCP spoken by our own client, MCP
#: through the SDK (handshake era), and the seed's REST wire.
SEARCH_BACKENDS = ("mcp", "mcp_sdk", "rest")
#: What is dropped from a search answer: a hit without a string id, an id that is no NFCorpus
#: id, an id already seen.
REPAIR_KINDS = ("malformed_hit", "invalid_id", "duplicate")
#: How one MCP call attempt ends (the failure reasons without ``mcp_``).
MCP_OUTCOMES = ("ok", *(r.removeprefix("mcp_") for r in FAILURE_REASONS if r.startswith("mcp_")))

for _outcome in ("completed", "failed"):
    REQUEST_SECONDS.labels(_outcome)
for _reason in FAILURE_REASONS:
    FAILURES.labels(_reason)
for _outcome in MCP_OUTCOMES:
    MCP_CALL_SECONDS.labels(_outcome)
for _backend in SEARCH_BACKENDS:
    BACKEND.labels(_backend)
for _kind in REPAIR_KINDS:
    REPAIRS.labels(_kind)
