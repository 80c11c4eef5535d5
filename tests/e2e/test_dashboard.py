"""The chart's dashboard and rules against a real Prometheus scraping the running stack under load.

Every panel query returns data (except the ones on cluster series, ``CLUSTER_SERIES``, and those
on a load test's client side, ``LOAD_TEST_SERIES``: tests/e2e/test_dashboard_load_test.py runs a
load test through a collector for them), every
recording and alerting rule evaluates, a healthy stack raises no alert (but the latency ones,
which a slow machine may pend), and a request's trace id reaches Prometheus as an exemplar on
both services' latency histograms: the way from a dashboard's slow bucket to the request's trace.
"""

from __future__ import annotations

import json
import math
import time
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from harness.dashboard import panel_values
from harness.processes import ServerProcess
from harness.prometheus import LocalPrometheus
from tests.support.green import run_green
from tests.support.purple import v03_body

#: How long to wait for Prometheus (scraping every second) to see what the stack did.
PATIENCE_S = 60.0
INVALID = 'purple_request_failures_total{reason="invalid_request"}'


def _until(condition: Callable[[], bool], what: str) -> None:
    """Poll ``condition`` until it holds: Prometheus scrapes and evaluates on its own clock."""
    deadline = time.monotonic() + PATIENCE_S
    while not condition():
        assert time.monotonic() < deadline, f"Prometheus never saw {what}"
        time.sleep(0.2)


def _served_value(url: str, series: str) -> float:
    """A series' value as the service exports it now."""
    lines = httpx.get(url + "/metrics", timeout=10).text.splitlines()
    return float(next(line for line in lines if line.startswith(series + " ")).split()[-1])


@pytest.fixture(scope="module")
def prometheus(
    purple_agent: ServerProcess, mcp_server: Any, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[LocalPrometheus]:
    targets = {
        "purple-agent": [purple_agent.base_url.removeprefix("http://")],
        "mcp-server": [mcp_server.base_url.removeprefix("http://")],
    }
    workdir = tmp_path_factory.mktemp("prometheus")
    with LocalPrometheus(workdir, targets, namespace="nfcorpus-test") as server:
        server.wait_for_targets()
        yield server


@pytest.fixture(scope="module")
def under_load(
    prometheus: LocalPrometheus,
    purple_agent: ServerProcess,
    tmp_path_factory: pytest.TempPathFactory,
) -> dict[str, Any]:
    """Twelve seconds of load, and a few invalid requests (the caller's own mistakes)."""
    out = tmp_path_factory.mktemp("load") / "load.json"
    args = ["--agent", purple_agent.base_url, "--duration", "12", "--concurrency", "2"]
    run = run_green("load", *args, "--out", str(out))
    assert run.returncode == 0, run.stdout + run.stderr
    for _ in range(3):
        httpx.post(purple_agent.base_url + "/", json=v03_body('{"query": ""}'), timeout=10)
    # Once Prometheus holds the count the agent exports now, it has scraped everything above.
    served = _served_value(purple_agent.base_url, INVALID)

    def scraped() -> bool:
        found = prometheus.query(f'max({INVALID[:-1]},namespace="nfcorpus-test"}})')
        return bool(found) and float(found[0]["value"][1]) >= served

    _until(scraped, "the invalid requests")
    return dict(json.loads(out.read_text()))


def test_every_panel_has_data(prometheus: LocalPrometheus, under_load: dict[str, Any]) -> None:
    assert under_load["ok"] > 0 and under_load["errors"] == 0
    empty = []
    for value in panel_values(prometheus):
        if value.query.needs_cluster or value.query.needs_load_test:
            continue
        if not any(math.isfinite(v) for _, v in value.series):
            empty.append(f"{value.query.panel} [{value.query.legend}]: {value.query.expr}")
    assert empty == [], "\n".join(empty)


def test_failures_show_by_reason_and_nothing_alerts(
    prometheus: LocalPrometheus, under_load: dict[str, Any]
) -> None:
    failures = prometheus.query(
        'sum by (reason) (increase(purple_request_failures_total{namespace="nfcorpus-test"}[1m]))'
    )
    by_reason = {r["metric"]["reason"]: float(r["value"][1]) for r in failures}
    assert by_reason["invalid_request"] > 0  # counted, from a series that existed at 0
    assert set(by_reason) >= {"deadline", "mcp_unavailable", "mcp_timeout"}
    # The caller's mistakes burn no error budget, and a healthy stack is pending no alert but
    # the latency ones: whether answers take over 1 s is a figure of the machine (a slow one
    # pends NfcorpusLatencyBudgetBurn*), every other rule tells what the stack did.
    errors = prometheus.query(
        'nfcorpus:purple_request_errors:ratio_rate5m{namespace="nfcorpus-test"}'
    )
    assert [float(r["value"][1]) for r in errors] == [0.0]
    _until(lambda: all(r["health"] != "unknown" for r in prometheus.rules()), "every rule run")
    broken = [
        f"{r['name']}: {r.get('lastError')}" for r in prometheus.rules() if r["health"] != "ok"
    ]
    assert broken == [], prometheus.log()
    assert prometheus.query('ALERTS{slo!="latency"}') == [], prometheus.log()


def test_a_request_trace_id_is_an_exemplar_of_both_services(
    prometheus: LocalPrometheus,
    purple_agent: ServerProcess,
    under_load: dict[str, Any],
) -> None:
    trace_id = uuid.uuid4().hex
    traceparent = f"00-{trace_id}-{uuid.uuid4().hex[:16]}-01"
    body = v03_body(json.dumps({"query": "omega-3 and heart disease", "top_k": 5}))
    answer = httpx.post(
        purple_agent.base_url + "/", json=body, headers={"traceparent": traceparent}, timeout=30
    )
    assert answer.json()["result"]["metadata"] == {"trace_id": trace_id}
    for histogram in ("purple_request_duration_seconds", "mcp_http_request_duration_seconds"):

        def stored(histogram: str = histogram) -> bool:
            found = prometheus.exemplars(f"{histogram}_bucket", since_s=PATIENCE_S + 30)
            return trace_id in {e["labels"]["trace_id"] for s in found for e in s["exemplars"]}

        _until(stored, f"the trace id as an exemplar of {histogram}")
