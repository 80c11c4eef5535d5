"""The purple agent's spans: one trace per request, the MCP call attempts as its children (retries
included, numbered), a request that fails in validation marked as an error with its reason, and
the trace id in the task's metadata."""

from __future__ import annotations

import json

import httpx

from harness.processes import McpServer, free_port
from services.purple_agent.settings import PurpleSettings
from tests.support.purple import ThreadedServer, v03_body
from tests.support.tracing import collected_spans, finished


async def test_a_request_and_its_mcp_call_are_one_trace(mcp_server: McpServer) -> None:
    settings = PurpleSettings(mcp_url=mcp_server.mcp_url, deadline_s=10)
    with ThreadedServer(settings) as purple, collected_spans() as exporter:
        async with httpx.AsyncClient(timeout=30) as http:
            body = v03_body(json.dumps({"query": "turmeric and cancer", "top_k": 4}))
            answered = (await http.post(purple.url + "/", json=body)).json()["result"]
            invalid = (await http.post(purple.url + "/", json=v03_body('{"query": ""}'))).json()
        spans = finished(exporter, "POST /", 2)
    served, refused = [s for s in spans if s.name == "POST /"]
    # The task names its trace, answered or failed: the caller can look it up.
    assert answered["metadata"] == {"trace_id": f"{served.context.trace_id:032x}"}
    assert invalid["result"]["metadata"] == {"trace_id": f"{refused.context.trace_id:032x}"}
    calls = [s for s in spans if s.name == "tools/call search_nfcorpus"]
    assert calls and all(c.context.trace_id == served.context.trace_id for c in calls)
    assert served.attributes is not None and served.attributes["nfcorpus.top_k"] == 4
    assert served.status.is_ok
    assert refused.status.status_code.name == "ERROR"
    assert refused.status.description == "invalid_request"


async def test_retries_are_numbered_attempts_of_one_trace() -> None:
    nowhere = f"http://127.0.0.1:{free_port()}/mcp"  # nothing listens: refused, retried
    settings = PurpleSettings(mcp_url=nowhere, deadline_s=10, mcp_retries=2, mcp_backoff_s=0.01)
    with ThreadedServer(settings) as purple, collected_spans() as exporter:
        async with httpx.AsyncClient(timeout=30) as http:
            body = v03_body(json.dumps({"query": "green tea", "top_k": 2}))
            task = (await http.post(purple.url + "/", json=body)).json()["result"]
        spans = finished(exporter, "POST /", 1)
    assert task["status"]["state"] == "failed"
    (request,) = [s for s in spans if s.name == "POST /"]
    attempts = [s for s in spans if s.name == "tools/call search_nfcorpus"]
    numbers = [int(str(a.attributes["mcp.attempt"])) for a in attempts if a.attributes]
    assert sorted(numbers) == [1, 2, 3]
    for attempt in attempts:
        assert attempt.context.trace_id == request.context.trace_id
        assert attempt.attributes is not None
        assert attempt.attributes["error.type"] == "mcp_unavailable"
        assert attempt.attributes["server.address"] == "127.0.0.1"
    assert request.status.description == "mcp_unavailable"
