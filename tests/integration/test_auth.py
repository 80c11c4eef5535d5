"""Authentication on: the MCP server and the purple agent with tokens, as a cluster runs them.

Each token opens what it is for only: callers' tokens the endpoints, the scrape token ``/metrics``
(as the chart's ServiceMonitor sends it, and a real Prometheus here).
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from harness.processes import ServerProcess
from harness.prometheus import LocalPrometheus
from services.common.auth import UNAUTHENTICATED
from services.green_agent.evaluation.client import A2AVersion, TransportFailure, connect
from services.green_agent.load.report import LoadReport
from services.green_agent.settings import GreenSettings
from services.purple_agent.settings import PurpleSettings
from tests.support.green import run_green
from tests.support.purple import ThreadedServer, v03_body, v10_body
from tests.support.raw_http import post_as_written
from tests.support.small_index import SmallIndex

AGENT_TOKEN = "purple-agent-token-0123456789"
ALICE, BOB = "alice-token-0123456789", "bob-token-0123456789"
SCRAPE = "scrape-token-0123456789"
METRICS_REFUSED = "authentication required: /metrics takes Authorization: Bearer <scrape token>"


@pytest.fixture(scope="module")
def secured_mcp(
    small_index: SmallIndex, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ServerProcess]:
    folder = tmp_path_factory.mktemp("secured")
    tokens = folder / "tokens"
    tokens.write_text(f"# mounted from a Secret\npurple:{AGENT_TOKEN}\n")
    scrape = folder / "scrape-token"
    scrape.write_text(SCRAPE)  # a Secret item, as the chart mounts it
    env = {
        **small_index.env(private_copy=True),
        "MCP_AUTH_TOKENS_FILE": str(tokens),
        "MCP_METRICS_TOKEN_FILE": str(scrape),
    }
    with ServerProcess.module("services.mcp_server", env=env, log_path=folder / "mcp.log") as s:
        yield s


@pytest.fixture(scope="module")
def secured_purple(secured_mcp: ServerProcess) -> Iterator[ThreadedServer]:
    settings = PurpleSettings(
        mcp_url=secured_mcp.base_url + "/mcp",
        mcp_token=AGENT_TOKEN,
        auth_tokens=f"alice:{ALICE},bob:{BOB}",
        metrics_token=SCRAPE,
    )
    with ThreadedServer(settings) as server:
        yield server


def _bearer(token: str | None) -> dict[str, str]:
    return {"authorization": f"Bearer {token}"} if token else {}


def test_the_mcp_server_answers_401_but_for_probes(secured_mcp: ServerProcess) -> None:
    base = secured_mcp.base_url
    search = {"query": "soy", "top_k": 2}
    assert httpx.post(f"{base}/search_nfcorpus", json=search).status_code == 401
    assert httpx.get(f"{base}/stats").status_code == 401
    assert httpx.post(f"{base}/mcp", json={"jsonrpc": "2.0", "id": 1}).status_code == 401
    for path in ("/healthz", "/readyz"):
        assert httpx.get(f"{base}{path}").status_code == 200, path
    with_token = httpx.post(f"{base}/search_nfcorpus", json=search, headers=_bearer(AGENT_TOKEN))
    assert with_token.status_code == 200 and len(with_token.json()["results"]) == 2


@pytest.mark.parametrize(
    "token",
    [None, AGENT_TOKEN, "not-a-token-0123456789"],
    ids=["no token", "a caller's token", "an unknown token"],
)
def test_the_mcp_server_refuses_a_scrape_without_the_scrape_token(
    secured_mcp: ServerProcess, token: str | None
) -> None:
    answer = httpx.get(f"{secured_mcp.base_url}/metrics", headers=_bearer(token))
    assert answer.status_code == 401
    assert answer.headers["www-authenticate"] == 'Bearer realm="nfcorpus-retrieval"'
    assert answer.json() == {"error": METRICS_REFUSED}  # and no figure


def test_the_scrape_token_opens_the_mcp_server_s_metrics_and_nothing_else(
    secured_mcp: ServerProcess,
) -> None:
    base = secured_mcp.base_url
    scrape = httpx.get(f"{base}/metrics", headers=_bearer(SCRAPE))
    assert scrape.status_code == 200
    assert "mcp_http_request_duration_seconds_count" in scrape.text
    search = {"query": "soy", "top_k": 2}
    headers = _bearer(SCRAPE)
    assert httpx.post(f"{base}/search_nfcorpus", json=search, headers=headers).status_code == 401
    assert httpx.get(f"{base}/stats", headers=headers).status_code == 401
    mcp = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    assert httpx.post(f"{base}/mcp", json=mcp, headers=headers).status_code == 401


async def test_the_agent_s_metrics_answer_the_scrape_token_only(
    secured_purple: ThreadedServer,
) -> None:
    async with httpx.AsyncClient(base_url=secured_purple.url, timeout=30) as http:
        for token in (None, ALICE, "not-a-token-0123456789"):
            refused = await http.get("/metrics", headers=_bearer(token))
            assert refused.status_code == 401, token
            assert refused.json() == {"error": METRICS_REFUSED}
        scrape = await http.get("/metrics", headers=_bearer(SCRAPE))
        assert scrape.status_code == 200
        assert "purple_http_request_duration_seconds_count" in scrape.text
        # The scrape token is no caller's: the A2A endpoint refuses it.
        body = v03_body('{"query": "green tea", "top_k": 3}')
        sent = await http.post("/", json=body, headers=_bearer(SCRAPE))
        assert sent.status_code == 401 and sent.json()["error"]["code"] == UNAUTHENTICATED
        for path in ("/healthz", "/readyz"):  # the kubelet's probes stay open
            assert (await http.get(path)).status_code == 200, path


def test_with_callers_tokens_and_no_scrape_token_metrics_are_closed(
    secured_mcp: ServerProcess,
) -> None:
    settings = PurpleSettings(
        mcp_url=secured_mcp.base_url + "/mcp", mcp_token=AGENT_TOKEN, auth_tokens=ALICE
    )
    with ThreadedServer(settings) as purple:
        for token in (None, ALICE, SCRAPE):
            answer = httpx.get(purple.url + "/metrics", headers=_bearer(token))
            assert answer.status_code == 401, token
        assert httpx.get(purple.url + "/healthz").status_code == 200


def test_a_prometheus_sending_the_scrape_token_scrapes_both_servers(
    secured_mcp: ServerProcess, secured_purple: ThreadedServer, tmp_path: Path
) -> None:
    targets = {
        "mcp-server": [secured_mcp.base_url.removeprefix("http://")],
        "purple-agent": [secured_purple.url.removeprefix("http://")],
    }
    with LocalPrometheus(tmp_path / "prometheus", targets, scrape_token=SCRAPE) as prometheus:
        prometheus.wait_for_targets()
        assert prometheus.query("mcp_http_request_duration_seconds_count")
        assert prometheus.query("purple_http_request_duration_seconds_count")


async def test_the_agent_needs_a_token_and_uses_its_own_for_mcp(
    secured_purple: ThreadedServer,
) -> None:
    async with httpx.AsyncClient(base_url=secured_purple.url, timeout=30) as http:
        v1_0 = {"a2a-version": "1.0"}
        card = (await http.get("/.well-known/agent-card.json", headers=v1_0)).json()
        assert card["securitySchemes"]["bearer"]["httpAuthSecurityScheme"]["scheme"] == "bearer"
        body = v03_body('{"query": "green tea", "top_k": 3}')
        assert (await http.post("/", json=body)).status_code == 401
        answer = (await http.post("/", json=body, headers=_bearer(ALICE))).json()
    task = answer["result"]
    assert task["status"]["state"] == "completed", task  # the agent's MCP token worked
    assert len(task["artifacts"][0]["parts"][0]["data"]["doc_ids"]) == 3


@pytest.mark.parametrize("protocol", ["1.0", "0.3"])
async def test_the_evaluator_sends_its_token(
    secured_purple: ThreadedServer, tmp_path: Path, protocol: A2AVersion
) -> None:
    token_file = tmp_path / "token"
    token_file.write_text(f"{BOB}\n")  # as a mounted Secret holds it
    settings = GreenSettings(agent_token_file=token_file)
    client = await connect(
        secured_purple.url, protocol, authorization=settings.agent_authorization()
    )
    try:
        reply = await client.ask("omega-3 and depression", 4)
    finally:
        await client.aclose()
    assert "completed" in reply.state.lower()
    without = await connect(secured_purple.url, "0.3")
    try:
        with pytest.raises(TransportFailure, match="401"):
            await without.ask("omega-3 and depression", 4)
    finally:
        await without.aclose()


async def test_a_wrong_mcp_token_fails_the_task_saying_401(
    secured_mcp: ServerProcess, caplog: pytest.LogCaptureFixture
) -> None:
    settings = PurpleSettings(
        mcp_url=secured_mcp.base_url + "/mcp", mcp_token="wrong-token-0123456789"
    )
    with ThreadedServer(settings) as purple:
        async with httpx.AsyncClient(timeout=30) as http:
            body = v03_body('{"query": "green tea", "top_k": 3}')
            task = (await http.post(purple.url + "/", json=body)).json()["result"]
    assert task["status"]["state"] == "failed"
    (part,) = task["status"]["message"]["parts"]
    assert part["text"] == "retrieval failed: the search service answered HTTP 401"
    # What the MCP server said, and where it is, go to the agent's log only.
    logged = [r.getMessage() for r in caplog.records if r.name.startswith("services.purple")]
    assert any(
        f"MCP server at {secured_mcp.base_url}/mcp answered HTTP 401" in line
        and "authentication failed" in line
        for line in logged
    ), logged


async def test_a_caller_sees_only_its_own_tasks(secured_purple: ThreadedServer) -> None:
    async with httpx.AsyncClient(base_url=secured_purple.url, timeout=30) as http:
        sent = await http.post("/", json=v03_body('{"query": "x"}'), headers=_bearer(ALICE))
        task_id = sent.json()["result"]["id"]
        get: dict[str, Any] = {
            "jsonrpc": "2.0",
            "id": uuid.uuid4().hex,
            "method": "tasks/get",
            "params": {"id": task_id},
        }
        own = (await http.post("/", json=get, headers=_bearer(ALICE))).json()
        other = (await http.post("/", json=get, headers=_bearer(BOB))).json()
    assert own["result"]["id"] == task_id
    assert "history" not in own["result"]  # the request text is not kept
    assert other["error"]["message"] == "Task not found"


async def test_without_authentication_tasks_cannot_be_read_back(mcp_server: Any) -> None:
    settings = PurpleSettings(mcp_url=mcp_server.mcp_url)
    get = {"jsonrpc": "2.0", "id": 1, "method": "tasks/get", "params": {"id": "any"}}
    with ThreadedServer(settings) as purple:
        async with httpx.AsyncClient(base_url=purple.url, timeout=30) as http:
            answer = (await http.post("/", json=get)).json()
    assert (answer["error"]["code"], answer["error"]["message"]) == (-32001, "Task not found")


@pytest.mark.parametrize(
    ("headers", "status"),
    [
        ({"origin": "http://evil.example"}, 403),  # a web page elsewhere
        ({"host": "evil.example"}, 421),  # DNS rebinding
    ],
)
def test_stats_reset_refuses_cross_site_requests(
    mcp_server: Any, headers: dict[str, str], status: int
) -> None:
    response = httpx.post(f"{mcp_server.base_url}/stats/reset", headers=headers)
    assert response.status_code == status
    assert httpx.post(f"{mcp_server.base_url}/stats/reset").status_code == 200


def test_header_values_are_read_without_surrounding_whitespace(
    secured_purple: ThreadedServer,
) -> None:
    """RFC 9110 section 5.5: a field value excludes leading and trailing whitespace, so a token
    or a version with a space or tab around it is still the caller's token and version."""
    body = v10_body([{"data": {"query": "green tea", "top_k": 3}}])
    headers = {
        "content-type": "application/json",
        "authorization": f"Bearer {ALICE} \t",
        "a2a-version": " 1.0\t",
    }
    status, answer = post_as_written(secured_purple.url + "/", body, headers)
    assert status == 200, answer
    assert answer["result"]["task"]["status"]["state"] == "TASK_STATE_COMPLETED", answer
    headers["authorization"] = f"Bearer {ALICE}x "
    status, answer = post_as_written(secured_purple.url + "/", body, headers)
    assert status == 401, answer


@pytest.mark.parametrize("given", [True, False])
def test_a_load_run_reads_the_mcp_server_s_counters_with_its_scrape_token(
    secured_purple: ThreadedServer, secured_mcp: ServerProcess, tmp_path: Path, given: bool
) -> None:
    out = tmp_path / "load.json"
    args = ["load", "--agent", secured_purple.url, "--concurrency", "2", "--duration", "2"]
    args += ["--queries", "test", "--mcp-url", secured_mcp.base_url + "/mcp", "--out", str(out)]
    env = {"GREEN_AGENT_TOKEN": ALICE}
    if given:
        env["GREEN_MCP_METRICS_TOKEN"] = SCRAPE
    run = run_green(*args, env=env)
    assert run.returncode == 0, run.stdout + run.stderr
    report = LoadReport.model_validate_json(out.read_text())
    assert report.ok > 0 and report.errors == 0
    if given:
        assert report.result_cache is not None and report.result_cache_unread is None
        assert report.result_cache.lookups >= report.ok  # every query looked the cache up
    else:
        # Without it the figure is missing, and the report says why and what to set.
        assert report.result_cache is None and report.result_cache_unread is not None
        assert report.result_cache_unread.startswith("HTTP 401 from ")
        assert "GREEN_MCP_METRICS_TOKEN" in report.result_cache_unread
        assert SCRAPE not in out.read_text()
        assert "result cache: not read (HTTP 401" in " ".join(run.stdout.split())  # wrapped
