"""The dashboard's load-test row against a real Prometheus scraping a running load test.

Two generator processes (a Job's pods) load the real purple agent and hand their snapshots to a
real collector, with the collector's token and the scrape token as the chart gives them; the
harness's Prometheus scrapes the collector and the agent. While the generators run, every query
of the row (read out of the dashboard, as Grafana asks them) returns a value, the client's p99
beside the agent's own; once the run ends, Prometheus holds the collector's merged counts.
"""

from __future__ import annotations

import math
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from harness.dashboard import PanelQuery, PanelValue, panel_queries, panel_values
from harness.processes import REPO, ServerProcess
from harness.prometheus import LocalPrometheus
from services.green_agent.load.report import LoadReport
from tests.support.green import CLI_TIMEOUT_S
from tests.support.load_collector import RUN, TOKEN, WORKERS, collector_process
from tests.support.polling import wait_for

SCRAPE_TOKEN = "load-test-scrape-token-0123456789"
DURATION_S = 12.0
EVERY_S = 0.5  # seconds between a generator's snapshots
#: The row's latency panel names its series so; the test reads the query by it.
CLIENT_P99 = "client p99"


def _generator(index: int, agent: str, collector: str, log: Path) -> subprocess.Popen[bytes]:
    args = ["--agent", agent, "--rate", "10", "--duration", str(DURATION_S)]
    args += ["--queries", "test", "--worker", str(index), "--workers", str(WORKERS)]
    args += ["--run", RUN, "--report-to", collector, "--report-every", str(EVERY_S)]
    args += ["--progress", "0", "--wait-agent", "30"]
    command = [sys.executable, "-m", "services.green_agent", "load", *args]
    env = {**os.environ, "PYTHONPATH": str(REPO), "GREEN_LOAD_COLLECTOR_TOKEN": TOKEN}
    with log.open("wb") as out:
        return subprocess.Popen(command, cwd=REPO, env=env, stdout=out, stderr=subprocess.STDOUT)


@pytest.fixture
def scraped_collector(
    purple_agent: ServerProcess, tmp_path: Path
) -> Iterator[tuple[ServerProcess, LocalPrometheus]]:
    """A collector whose ``/metrics`` takes the scrape token, and Prometheus scraping it."""
    collector, _ = collector_process(tmp_path, scrape_token=SCRAPE_TOKEN)
    collector.start(timeout_s=30)
    targets = {
        "purple-agent": [purple_agent.base_url.removeprefix("http://")],
        "load-collector": [collector.base_url.removeprefix("http://")],
    }
    try:
        # The agent has no tokens and ignores the header; the collector answers no other.
        prometheus = LocalPrometheus(tmp_path / "prometheus", targets, scrape_token=SCRAPE_TOKEN)
        with prometheus:
            prometheus.wait_for_targets()
            yield collector, prometheus
    finally:
        collector.stop()


def _row(values: list[PanelValue], queries: list[PanelQuery]) -> list[PanelValue]:
    """The values of the load-test row's queries: those on its series, and their panels' others."""
    panels = {q.panel for q in queries if q.needs_load_test}
    return [v for v in values if v.query.panel in panels]


def _has_value(value: PanelValue) -> bool:
    return any(math.isfinite(v) for _, v in value.series)


def _missing(prometheus: LocalPrometheus) -> list[str]:
    """The row's queries without a value now; failures by reason may be empty while none failed."""
    values = _row(panel_values(prometheus), panel_queries(prometheus.namespace))
    failed = prometheus.query(f'sum(loadtest_requests_total{{outcome="failed",run="{RUN}"}})')
    none_failed = not failed or float(failed[0]["value"][1]) == 0
    return [
        f"{v.query.panel} [{v.query.legend}]: {v.query.expr}"
        for v in values
        if not _has_value(v)
        and not (none_failed and "loadtest_request_failures_total" in v.query.expr)
    ]


def _instant(prometheus: LocalPrometheus, expr: str) -> float | None:
    found = prometheus.query(expr)
    return float(found[0]["value"][1]) if found else None


def test_the_dashboard_draws_the_client_side_while_the_load_test_runs(
    purple_agent: ServerProcess,
    scraped_collector: tuple[ServerProcess, LocalPrometheus],
    tmp_path: Path,
) -> None:
    collector, prometheus = scraped_collector
    # Before any report: the series exist at 0, the generators all waiting.
    waiting = f'loadtest_workers{{run="{RUN}",status="waiting"}}'
    wait_for(
        lambda: _instant(prometheus, waiting) == WORKERS, timeout_s=30, what="the waiting workers"
    )
    (p99,) = [q for q in panel_queries(prometheus.namespace) if q.legend == CLIENT_P99]
    assert p99.needs_load_test
    logs = [tmp_path / f"generator-{i}.log" for i in range(WORKERS)]
    generators = [_generator(i, purple_agent.base_url, collector.base_url, logs[i]) for i in (0, 1)]
    running_now = f'loadtest_workers{{run="{RUN}",status="running"}}'
    try:
        # A generator is running once it has handed in its first snapshot: one slower to start
        # may still be waiting when the other's figures are already on the row.
        wait_for(
            lambda: (
                _instant(prometheus, running_now) == WORKERS
                and _instant(prometheus, p99.expr) is not None
                and not _missing(prometheus)
            ),
            timeout_s=DURATION_S + CLI_TIMEOUT_S,
            what="both generators running and a value of every query of the load-test row",
        )
        client_p99 = _instant(prometheus, p99.expr)
        running = _instant(prometheus, running_now)
        # Seen during the run, not after it: both generators still run, the run is incomplete.
        still_running = [g.poll() is None for g in generators]
        complete = _instant(prometheus, f'loadtest_run_complete{{run="{RUN}"}}')
        for generator, log in zip(generators, logs, strict=True):
            assert generator.wait(timeout=DURATION_S + CLI_TIMEOUT_S) == 0, log.read_text()
    finally:
        for generator in generators:
            generator.kill()
    assert still_running == [True, True] and complete == 0 and running == WORKERS
    assert client_p99 is not None and client_p99 > 0  # a value, whatever the machine's speed
    # Once the run is over, Prometheus holds the collector's merged counts, the run complete.
    merged = LoadReport.model_validate_json(httpx.get(collector.base_url + "/report").content)
    assert merged.complete and merged.ok > 0
    answered = f'sum(loadtest_requests_total{{run="{RUN}",outcome="answered"}})'
    wait_for(
        lambda: (
            _instant(prometheus, answered) == merged.ok
            and _instant(prometheus, f'loadtest_run_complete{{run="{RUN}"}}') == 1
        ),
        timeout_s=30,
        what="the run's final counts in Prometheus",
    )
    count = f'sum(loadtest_request_duration_seconds_count{{run="{RUN}"}})'
    assert _instant(prometheus, count) == merged.ok
