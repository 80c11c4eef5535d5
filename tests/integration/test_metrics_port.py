"""``SERVER_METRICS_PORT``: ``/metrics`` on a port of its own, so a rule that lets Prometheus in
opens that port alone (issue 52, input 7). The MCP server under uvicorn and under gunicorn, as
the chart runs it, the purple agent and the load collector: the metrics port serves ``/metrics``
and nothing else (not ``/mcp``, not ``/stats/reset``, not A2A, not ``POST /reports``, not the
probes), the API port serves everything but ``/metrics``, and the scrape token is still needed
there."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest

from harness.processes import McpServer, ServerProcess, free_port, gunicorn_mcp_server
from tests.support.load_collector import BEARER, collector_process, worker_report
from tests.support.small_index import SmallIndex

SCRAPE = "scrape-token-0123456789"
CALLER = "purple-token-0123456789"
# What the API port serves and the metrics port must not: MCP, the counter's reset, the REST
# search, the probes (the kubelet probes the API port).
OFF_THE_METRICS_PORT = (
    ("POST", "/mcp"),
    ("GET", "/mcp"),
    ("POST", "/stats/reset"),
    ("GET", "/stats"),
    ("POST", "/search_nfcorpus"),
    ("GET", "/healthz"),
    ("GET", "/readyz"),
    ("GET", "/"),
    ("GET", "/metrics/"),
)


def _uvicorn(env: dict[str, str], log: Path) -> ServerProcess:
    return ServerProcess.module("services.mcp_server", env=env, log_path=log)


@pytest.fixture(params=[_uvicorn, gunicorn_mcp_server], ids=["uvicorn", "gunicorn"])
def split(
    request: pytest.FixtureRequest, small_index: SmallIndex, tmp_path: Path
) -> Iterator[tuple[ServerProcess, str]]:
    """An MCP server with a metrics port, and the metrics port's base URL."""
    start: Callable[[dict[str, str], Path], ServerProcess] = request.param
    metrics_port = free_port()
    env = {**small_index.env(private_copy=True), "SERVER_METRICS_PORT": str(metrics_port)}
    server = start(env, tmp_path / "server.log")
    server.start(timeout_s=90)
    try:
        yield server, f"http://127.0.0.1:{metrics_port}"
    finally:
        server.stop(timeout_s=30)


def test_metrics_only_on_the_metrics_port(split: tuple[ServerProcess, str]) -> None:
    server, metrics_base = split
    search = httpx.post(
        f"{server.base_url}/search_nfcorpus", json={"query": "soy milk", "top_k": 3}
    )
    assert search.status_code == 200
    assert httpx.get(f"{server.base_url}/readyz").status_code == 200  # the probes stay here
    assert httpx.get(f"{server.base_url}/healthz").status_code == 200
    assert httpx.get(f"{server.base_url}/metrics").status_code == 404
    scrape = httpx.get(f"{metrics_base}/metrics")
    assert scrape.status_code == 200
    assert 'mcp_searches_total{outcome="ok",via="rest"}' in scrape.text
    for method, path in OFF_THE_METRICS_PORT:
        answer = httpx.request(method, f"{metrics_base}{path}", json={}, follow_redirects=False)
        assert answer.status_code == 404, (method, path, answer.text)


def test_a_reset_through_the_metrics_port_resets_nothing(split: tuple[ServerProcess, str]) -> None:
    server, metrics_base = split
    httpx.post(f"{server.base_url}/search_nfcorpus", json={"query": "kale", "top_k": 3})
    before = httpx.get(f"{server.base_url}/stats").json()
    assert httpx.post(f"{metrics_base}/stats/reset").status_code == 404
    assert httpx.get(f"{server.base_url}/stats").json() == before


def test_the_metrics_port_still_asks_for_the_scrape_token(
    small_index: SmallIndex, tmp_path: Path
) -> None:
    tokens, scrape = tmp_path / "tokens", tmp_path / "scrape-token"
    tokens.write_text(f"purple:{CALLER}\n")
    scrape.write_text(SCRAPE)
    metrics_port = free_port()
    env = {
        **small_index.env(private_copy=True),
        "MCP_AUTH_TOKENS_FILE": str(tokens),
        "MCP_METRICS_TOKEN_FILE": str(scrape),
        "SERVER_METRICS_PORT": str(metrics_port),
    }
    with _uvicorn(env, tmp_path / "server.log") as server:
        metrics = f"http://127.0.0.1:{metrics_port}/metrics"
        assert httpx.get(metrics).status_code == 401
        assert httpx.get(metrics, headers={"authorization": f"Bearer {CALLER}"}).status_code == 401
        assert httpx.get(metrics, headers={"authorization": f"Bearer {SCRAPE}"}).status_code == 200
        # The API port answers /metrics as a path it does not have, whatever the token.
        on_api = httpx.get(
            f"{server.base_url}/metrics", headers={"authorization": f"Bearer {SCRAPE}"}
        )
        assert on_api.status_code == 404


def test_a_metrics_port_that_is_the_api_port_is_refused_at_start(
    small_index: SmallIndex, tmp_path: Path
) -> None:
    port = free_port()
    env = {**small_index.env(private_copy=True), "SERVER_METRICS_PORT": str(port)}
    server = ServerProcess.module(
        "services.mcp_server", port=port, env=env, log_path=tmp_path / "server.log"
    )
    with pytest.raises(RuntimeError, match="server exited"):
        server.start(timeout_s=60)
    assert "SERVER_METRICS_PORT" in server.log() and "port of its own" in server.log()


def test_the_purple_agent_serves_a2a_on_its_port_and_metrics_on_the_other(
    mcp_server: McpServer, tmp_path: Path
) -> None:
    metrics_port = free_port()
    env = {"PURPLE_MCP_URL": mcp_server.mcp_url, "SERVER_METRICS_PORT": str(metrics_port)}
    log = tmp_path / "purple.log"
    with ServerProcess.module("services.purple_agent", env=env, log_path=log) as purple:
        metrics_base = f"http://127.0.0.1:{metrics_port}"
        card = "/.well-known/agent-card.json"
        assert httpx.get(f"{purple.base_url}{card}").status_code == 200
        assert httpx.get(f"{purple.base_url}/metrics").status_code == 404
        scrape = httpx.get(f"{metrics_base}/metrics")
        assert scrape.status_code == 200 and "purple_" in scrape.text
        assert httpx.get(f"{metrics_base}{card}").status_code == 404
        send = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {}}
        assert httpx.post(f"{metrics_base}/", json=send).status_code == 404


def test_the_load_collector_takes_reports_on_its_port_and_is_scraped_on_the_other(
    tmp_path: Path,
) -> None:
    metrics_port = free_port()
    server, _ = collector_process(tmp_path, scrape_token=SCRAPE, metrics_port=metrics_port)
    with server:
        metrics = f"http://127.0.0.1:{metrics_port}/metrics"
        report = worker_report(0).model_dump_json()
        headers = {"authorization": BEARER, "content-type": "application/json"}
        # Reports go to the collector's own port only; the metrics port has nothing else.
        refused = httpx.post(f"http://127.0.0.1:{metrics_port}/reports", content=report)
        assert refused.status_code == 404
        assert httpx.get(f"http://127.0.0.1:{metrics_port}/report").status_code == 404
        taken = httpx.post(f"{server.base_url}/reports", content=report, headers=headers)
        assert taken.status_code == 200, taken.text
        assert httpx.get(f"{server.base_url}/metrics").status_code == 404
        # The run's client-side figures, for the scrape token alone (not the reporters' token).
        assert httpx.get(metrics, headers={"authorization": BEARER}).status_code == 401
        scrape = httpx.get(metrics, headers={"authorization": f"Bearer {SCRAPE}"})
        assert scrape.status_code == 200
        assert 'loadtest_requests_total{outcome="answered",run="release-r1",worker="0"} 40.0' in (
            scrape.text
        )
