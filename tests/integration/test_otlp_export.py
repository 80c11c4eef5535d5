"""Both servers export to a real OTLP receiver on loopback, one over gRPC and one over
HTTP/protobuf: the caller's trace id runs from the purple agent's request down to the MCP
server's store calls, and comes back in the answer's ``traceresponse`` header."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import httpx
import pytest

from harness.processes import ServerProcess
from tests.support.otlp import OtlpReceiver
from tests.support.purple import v03_body
from tests.support.small_index import SmallIndex

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
CALLER_SPAN = "00f067aa0ba902b7"
FAST_EXPORT = {"OTEL_BSP_SCHEDULE_DELAY": "100"}


@pytest.fixture(scope="module")
def traced(
    small_index: SmallIndex, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[OtlpReceiver, ServerProcess]]:
    folder = tmp_path_factory.mktemp("otlp")
    with OtlpReceiver() as receiver:
        mcp_env = {
            **small_index.env(private_copy=True),
            **FAST_EXPORT,
            "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.http_endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_RESOURCE_ATTRIBUTES": "deployment.environment.name=ci",
        }
        mcp = ServerProcess.module("services.mcp_server", env=mcp_env, log_path=folder / "mcp.log")
        with mcp:
            purple_env = {
                **FAST_EXPORT,
                "PURPLE_MCP_URL": mcp.base_url + "/mcp",
                "OTEL_EXPORTER_OTLP_ENDPOINT": receiver.grpc_endpoint,
                "OTEL_EXPORTER_OTLP_PROTOCOL": "grpc",
            }
            purple = ServerProcess.module(
                "services.purple_agent", env=purple_env, log_path=folder / "purple.log"
            )
            with purple:
                yield receiver, purple


def test_one_trace_from_the_caller_down_to_the_store(
    traced: tuple[OtlpReceiver, ServerProcess],
) -> None:
    receiver, purple = traced
    headers = {"traceparent": f"00-{TRACE_ID}-{CALLER_SPAN}-01"}
    body = v03_body(json.dumps({"query": "omega-3 fatty acids and heart disease", "top_k": 3}))
    answer = httpx.post(purple.base_url + "/", json=body, headers=headers, timeout=30)
    assert answer.json()["result"]["status"]["state"] == "completed"
    assert answer.headers["traceresponse"].startswith(f"00-{TRACE_ID}-")

    deadline = time.monotonic() + 15
    while time.monotonic() < deadline:
        spans = receiver.of_trace(TRACE_ID)
        if {"store.search", "POST /"} <= {s.name for s in spans} and len(
            {s.service for s in spans}
        ) == 2:
            break
        time.sleep(0.2)
    by_service = {s.service for s in spans}
    assert by_service == {"purple-agent", "nfcorpus-mcp-server"}, spans
    root = next(s for s in spans if s.service == "purple-agent" and s.name == "POST /")
    assert root.parent_id == CALLER_SPAN  # the caller's span is the parent of ours
    names = {(s.service, s.name) for s in spans}
    for expected in [
        ("nfcorpus-mcp-server", "POST /mcp"),
        ("nfcorpus-mcp-server", "search"),
        ("nfcorpus-mcp-server", "retrieve"),
        ("nfcorpus-mcp-server", "store.search"),
    ]:
        assert expected in names, names
    mcp_resource = next(s.resource for s in spans if s.service == "nfcorpus-mcp-server")
    assert mcp_resource["deployment.environment.name"] == "ci"
    assert mcp_resource["service.version"] not in ("", "unknown")
    purple_resource = root.resource
    assert purple_resource["deployment.environment.name"] == "local"
