"""Who sends the traffic and the 401s, as an operator reads it: the caller's name, never a token.

The MCP server and the purple agent run as processes with authentication on and JSON logs (a
container's stdout). The agent calls the MCP server with its own bare token (as the chart gives
it), an evaluator calls the agent with its named token and another caller with a bare one, and careless callers send no token, a token no one was given, or a known
token to the wrong door. Each request's log line and its series in ``/metrics`` name the caller;
refusals are counted by reason; no token's text appears in any log line or any figure.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.processes import ServerProcess
from tests.support.polling import wait_for
from tests.support.purple import v03_body
from tests.support.small_index import SmallIndex

AGENT = "agent-token-0123456789abcdef"
EVALUATOR = "evaluator-token-0123456789ab"
BARE = "bare-token-0123456789abcdefgh"  # a caller's token without a name: unnamed
BENCH = "bench-token-0123456789abcdefg"
SCRAPE = "scrape-token-0123456789abcdef"
STRANGER = "stranger-token-0123456789abcd"
TOKENS = (AGENT, EVALUATOR, BARE, BENCH, SCRAPE, STRANGER)
# The servers, and their logs.
Stack = tuple[ServerProcess, Path, ServerProcess, Path]


@pytest.fixture(scope="module")
def stack(small_index: SmallIndex, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("callers")
    mcp_log, purple_log = folder / "mcp.log", folder / "purple.log"
    tokens = folder / "tokens"
    tokens.write_text(f"{AGENT}\nbench:{BENCH}\n")  # bare, as the chart's: the purple agent's
    mcp_env = {
        **small_index.env(private_copy=True),
        "LOG_FORMAT": "json",
        "MCP_AUTH_TOKENS_FILE": str(tokens),
        "MCP_METRICS_TOKEN": SCRAPE,  # bare, as the chart's Secret item holds it: "scraper"
    }
    with ServerProcess.module("services.mcp_server", env=mcp_env, log_path=mcp_log) as mcp:
        purple_env = {
            "LOG_FORMAT": "json",
            "PURPLE_MCP_URL": mcp.base_url + "/mcp",
            "PURPLE_MCP_TOKEN": AGENT,
            "PURPLE_AUTH_TOKENS": f"evaluator:{EVALUATOR},{BARE}",
            "PURPLE_METRICS_TOKEN": f"prometheus:{SCRAPE}",
        }
        with ServerProcess.module(
            "services.purple_agent", env=purple_env, log_path=purple_log
        ) as purple:
            yield mcp, mcp_log, purple, purple_log


def _bearer(token: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


def _request_lines(path: Path) -> list[dict[str, Any]]:
    complete = path.read_text().split("\n")[:-1]  # a line still being written is no record
    lines = [json.loads(line) for line in complete if line.strip()]
    return [line for line in lines if line["logger"] == "nfcorpus.request"]


def _series(text: str, name: str) -> dict[str, float]:
    """``name``'s samples by their label text (``{caller="…",…}``)."""
    prefix = name + "{"
    return {
        line[len(name) : line.rindex(" ")]: float(line.split()[-1])
        for line in text.splitlines()
        if line.startswith(prefix)
    }


def test_log_lines_and_metrics_name_the_caller_and_no_token(stack: Stack) -> None:
    mcp, mcp_log, purple, purple_log = stack
    query = v03_body(json.dumps({"query": "vitamin D and bone health", "top_k": 3}))
    for caller in (EVALUATOR, BARE):
        answer = httpx.post(purple.base_url + "/", json=query, headers=_bearer(caller), timeout=60)
        assert answer.json()["result"]["status"]["state"] == "completed"
    search = {"query": "soy", "top_k": 2}
    rest = mcp.base_url + "/search_nfcorpus"
    assert httpx.post(rest, json=search, headers=_bearer(BENCH)).status_code == 200
    for token in (None, STRANGER, SCRAPE):  # none, no one's, the scraper's at a caller's door
        assert httpx.post(rest, json=search, headers=_bearer(token)).status_code == 401
    metrics = mcp.base_url + "/metrics"
    assert httpx.get(metrics, headers=_bearer(AGENT)).status_code == 401  # a caller's at /metrics
    assert httpx.get(metrics, headers=_bearer(SCRAPE)).status_code == 200
    figures = httpx.get(metrics, headers=_bearer(SCRAPE))  # a scrape is counted as it ends
    agent_figures = httpx.get(purple.base_url + "/metrics", headers=_bearer(SCRAPE)).text

    wait_for(
        lambda: len(_request_lines(mcp_log)) >= 6 and len(_request_lines(purple_log)) >= 2,
        timeout_s=30,
        what="request lines of both servers",
    )
    asked = [(r["caller"], r["outcome"]) for r in _request_lines(purple_log) if r["route"] == "/"]
    assert asked == [("evaluator", "ok"), ("unnamed", "ok")]
    by_route: dict[str, list[tuple[str, int]]] = {}
    for line in _request_lines(mcp_log):
        by_route.setdefault(line["route"], []).append((line["caller"], line["status"]))
    assert set(by_route["/mcp"]) == {("purple-agent", 200)}  # the agent's session and its call
    bench, *refused = by_route["/search_nfcorpus"]
    assert bench == ("bench", 200)
    assert refused == [("anonymous", 401), ("unknown", 401), ("scraper", 401)]
    assert "/metrics" not in by_route  # scrapes are quiet: counted, not logged

    requests = _series(figures.text, "mcp_http_request_duration_seconds_count")
    assert requests['{caller="purple-agent",outcome="ok",route="/mcp"}'] >= 1
    assert requests['{caller="bench",outcome="ok",route="/search_nfcorpus"}'] == 1
    assert requests['{caller="scraper",outcome="ok",route="/metrics"}'] >= 1
    failures = _series(figures.text, "mcp_http_auth_failures_total")
    assert {labels for labels, n in failures.items() if n} == {
        '{caller="anonymous",reason="missing",route="/search_nfcorpus"}',
        '{caller="unknown",reason="invalid",route="/search_nfcorpus"}',
        '{caller="scraper",reason="wrong_purpose",route="/search_nfcorpus"}',
        '{caller="purple-agent",reason="wrong_purpose",route="/metrics"}',
    }
    agent_requests = _series(agent_figures, "purple_http_request_duration_seconds_count")
    assert agent_requests['{caller="evaluator",outcome="ok",route="/"}'] == 1
    assert agent_requests['{caller="unnamed",outcome="ok",route="/"}'] == 1

    written = "\n".join([mcp_log.read_text(), purple_log.read_text(), figures.text, agent_figures])
    for token in TOKENS:
        assert token not in written
    assert "client-" not in written  # nor the name a bare token's hash gives it
