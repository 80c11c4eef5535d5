"""Failure series exist at 0 from start-up, and every failure reason the code uses is one of them."""

from __future__ import annotations

import subprocess
import sys

import pytest

from harness.processes import REPO
from services.common.http_pool import ConnectFailed, ConnectionBroken
from services.common.jsonrpc import RpcError
from services.purple_agent.metrics import (
    FAILURE_REASONS,
    MCP_OUTCOMES,
    REPAIR_KINDS,
    SEARCH_BACKENDS,
)
from services.purple_agent.search.backend import (
    BadAnswer,
    McpCallError,
    NoBackend,
    ServerFailed,
    ServerRefused,
    ToolFailed,
    classify,
)
from services.telemetry.metrics import LATENCY_BUCKETS

URL = "http://mcp:8000/mcp"


def test_purple_failure_series_are_exported_at_zero() -> None:
    # A fresh interpreter: in this one other tests have counted failures already.
    code = (
        "import services.purple_agent.metrics\n"
        "from prometheus_client import REGISTRY, generate_latest\n"
        "print(generate_latest(REGISTRY).decode())"
    )
    text = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, check=True
    ).stdout
    for reason in FAILURE_REASONS:
        assert f'purple_request_failures_total{{reason="{reason}"}} 0.0' in text
    for outcome in MCP_OUTCOMES:
        assert f'purple_mcp_call_duration_seconds_count{{outcome="{outcome}"}} 0.0' in text
    assert 'purple_request_duration_seconds_count{outcome="failed"} 0.0' in text
    for backend in SEARCH_BACKENDS:
        assert f'purple_search_backend{{backend="{backend}"}} 0.0' in text
    for kind in REPAIR_KINDS:
        assert f'purple_search_repairs_total{{kind="{kind}"}} 0.0' in text


@pytest.mark.parametrize(
    "error",
    [
        ServerRefused(503),
        ServerFailed(401, "authentication failed"),
        ConnectFailed("refused"),
        ConnectionBroken("reset"),
        RpcError(-32601, "method not found"),
        BadAnswer("not JSON"),
        TimeoutError(),
        ValueError("anything else"),
        McpCallError("mcp_tool_error", "bad", retryable=False),
        ToolFailed("the store is down"),
        NoBackend("found neither MCP nor the REST search wire"),
    ],
)
def test_every_classified_mcp_failure_has_a_series(error: BaseException) -> None:
    assert classify(error, URL).reason in FAILURE_REASONS


def test_buckets_have_an_edge_at_every_slo_threshold() -> None:
    for threshold in (0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0):
        assert threshold in LATENCY_BUCKETS
