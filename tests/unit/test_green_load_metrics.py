"""The load test's client side at the collector's ``/metrics``: each worker's figures as its
latest report states them, cumulative, in the servers' buckets, at 0 before its first report; a
retried pod's reset; and ``/metrics`` as open as ``/report`` unless a scrape token is set."""

from __future__ import annotations

import asyncio
import time

import httpx
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.load.collector import Collector, silence_s
from services.green_agent.load.collector_app import create_collector_app
from services.green_agent.load.metrics import BUCKET_BOUNDS, LoadTestMetrics
from services.green_agent.load.report import LoadReport
from services.telemetry.metrics import LATENCY_BUCKETS, http_request_histogram
from tests.support.load_reports import report_of

RUN = "release-r1"
REPORT_TOKEN = "load-collector-test-token-0123456789"
SCRAPE_TOKEN = "scrape-test-token-0123456789abcdef"

Samples = dict[tuple[str, frozenset[tuple[str, str]]], float]


def _report(
    worker: int,
    latencies: list[float],
    failures: dict[str, int] | None = None,
    *,
    sequence: int = 0,
    session: str = "a",
    partial: bool = True,
) -> LoadReport:
    outcomes = [
        QueryOutcome(f"q{worker}-{i}", s, ["MED-1"], started_s=i / 10)
        for i, s in enumerate(latencies)
    ]
    for reason, count in (failures or {}).items():
        outcomes += [
            QueryOutcome(f"f{reason}-{i}", 0.5, None, reason, "it failed", started_s=i / 10)
            for i in range(count)
        ]
    wall_s = len(outcomes) / 10 + 0.1
    report = report_of(outcomes, wall_s=wall_s, duration_s=10.0, worker=worker, run=RUN)
    update = {"partial": partial, "sequence": sequence, "session": session, "report_every_s": 1.0}
    return report.model_copy(update=update)


def _samples(metrics: LoadTestMetrics) -> Samples:
    registry = CollectorRegistry()
    registry.register(metrics)
    text = generate_latest(registry).decode()
    return {
        (s.name, frozenset(s.labels.items())): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def _get(samples: Samples, name: str, **labels: str) -> float:
    return samples[(name, frozenset({"run": RUN, **labels}.items()))]


def test_before_any_report_every_worker_s_series_is_at_zero() -> None:
    samples = _samples(LoadTestMetrics(Collector(2, RUN)))
    for worker in ("0", "1"):
        for outcome in ("answered", "failed"):
            assert _get(samples, "loadtest_requests_total", worker=worker, outcome=outcome) == 0
        assert _get(samples, "loadtest_requests_dropped_total", worker=worker) == 0
        assert _get(samples, "loadtest_request_duration_seconds_count", worker=worker) == 0
        for le in BUCKET_BOUNDS:
            bucket = _get(samples, "loadtest_request_duration_seconds_bucket", worker=worker, le=le)
            assert bucket == 0
        assert _get(samples, "loadtest_requests_in_flight", worker=worker) == 0
    assert _get(samples, "loadtest_workers", status="waiting") == 2
    assert _get(samples, "loadtest_workers", status="running") == 0
    assert _get(samples, "loadtest_run_complete") == 0
    assert not [name for name, _ in samples if name == "loadtest_request_failures_total"]


def test_a_worker_s_snapshot_is_its_cumulative_figures_in_the_servers_buckets() -> None:
    collector = Collector(2, RUN)
    latencies = [0.004, 0.02, 0.02, 0.3, 1.0, 3.0]
    report = _report(0, latencies, {"timeout": 2, "contract": 1})
    assert collector.add(report) is None
    samples = _samples(LoadTestMetrics(collector))
    worker = {"worker": "0"}
    assert _get(samples, "loadtest_requests_total", outcome="answered", **worker) == 6
    assert _get(samples, "loadtest_requests_total", outcome="failed", **worker) == 3
    assert _get(samples, "loadtest_request_failures_total", reason="timeout", **worker) == 2
    assert _get(samples, "loadtest_request_failures_total", reason="contract", **worker) == 1
    # Cumulative under each bound, an answer on an edge counted under it (Prometheus's le).
    for bound, le in zip(LATENCY_BUCKETS, BUCKET_BOUNDS, strict=False):
        under = sum(1 for s in latencies if s <= bound)
        bucket = _get(samples, "loadtest_request_duration_seconds_bucket", le=le, **worker)
        assert bucket == under, le
    assert _get(samples, "loadtest_request_duration_seconds_bucket", le="+Inf", **worker) == 6
    assert _get(samples, "loadtest_request_duration_seconds_count", **worker) == 6
    total = _get(samples, "loadtest_request_duration_seconds_sum", **worker)
    assert abs(total - sum(latencies)) < 1e-9
    assert _get(samples, "loadtest_requests_in_flight", **worker) == report.timeline[-1].in_flight
    assert _get(samples, "loadtest_workers", status="running") == 1
    assert _get(samples, "loadtest_workers", status="waiting") == 1
    # The other worker, not heard from yet, is still there at 0.
    assert _get(samples, "loadtest_requests_total", worker="1", outcome="answered") == 0


def test_the_bounds_read_as_the_servers_histograms_write_them() -> None:
    histogram = http_request_histogram("load_metrics_test")
    histogram.labels("/x", "ok", "anonymous").observe(0.01)
    served = {
        s.labels["le"]
        for family in histogram.collect()
        for s in family.samples
        if s.name.endswith("_bucket")
    }
    assert set(BUCKET_BOUNDS) == served and "1.0" in BUCKET_BOUNDS


def test_finished_and_cut_short_workers_have_nothing_in_flight_and_the_run_completes() -> None:
    collector = Collector(2, RUN)
    collector.add(_report(0, [0.01] * 5, sequence=3))
    collector.add(_report(1, [0.01] * 8, sequence=4, partial=False))
    later = time.monotonic() + silence_s(_report(0, [0.01], sequence=0)) + 1
    assert collector.check_silence(later) == [0]
    samples = _samples(LoadTestMetrics(collector))
    assert _get(samples, "loadtest_workers", status="cut_short") == 1
    assert _get(samples, "loadtest_workers", status="finished") == 1
    assert _get(samples, "loadtest_run_complete") == 1
    for worker in ("0", "1"):
        assert _get(samples, "loadtest_requests_in_flight", worker=worker) == 0
    # The cut-short worker's share up to its last snapshot stays.
    assert _get(samples, "loadtest_requests_total", worker="0", outcome="answered") == 5


def test_a_retried_pod_resets_its_worker_s_counters_only() -> None:
    collector = Collector(2, RUN)
    collector.add(_report(0, [0.01] * 30, sequence=5, session="first"))
    collector.add(_report(1, [0.01] * 20, sequence=2))
    metrics = LoadTestMetrics(collector)
    before = _samples(metrics)
    # The pod was retried: its new process starts from nothing, and its figures replace the
    # old ones. Prometheus reads the drop as the reset of a restarted process.
    collector.add(_report(0, [0.01] * 4, sequence=0, session="second"))
    after = _samples(metrics)
    answered = {"outcome": "answered"}
    assert _get(before, "loadtest_requests_total", worker="0", **answered) == 30
    assert _get(after, "loadtest_requests_total", worker="0", **answered) == 4
    assert _get(after, "loadtest_requests_total", worker="1", **answered) == 20


def _scrape(
    collector: Collector,
    headers: dict[str, str],
    tokens: dict[str, str] | None = None,
    metrics_tokens: dict[str, str] | None = None,
) -> httpx.Response:
    app = create_collector_app(collector, tokens, metrics_tokens)

    async def get() -> httpx.Response:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as http:
            return await http.get("/metrics", headers=headers)

    return asyncio.run(get())


def test_metrics_are_as_open_as_the_report_unless_a_scrape_token_is_set() -> None:
    reports = {REPORT_TOKEN: "load-generator"}
    collector = Collector(1, RUN)
    # The collector's token guards who hands reports in, not who reads them.
    open_scrape = _scrape(collector, {}, tokens=reports)
    assert open_scrape.status_code == 200
    assert 'loadtest_requests_total{outcome="answered",run="release-r1",worker="0"} 0.0' in (
        open_scrape.text
    )
    scraper = {SCRAPE_TOKEN: "prometheus"}
    refused = _scrape(collector, {}, tokens=reports, metrics_tokens=scraper)
    assert refused.status_code == 401
    # The reporters' token is not the scraper's.
    wrong = {"authorization": f"Bearer {REPORT_TOKEN}"}
    assert _scrape(collector, wrong, tokens=reports, metrics_tokens=scraper).status_code == 401
    right = {"authorization": f"Bearer {SCRAPE_TOKEN}"}
    assert _scrape(collector, right, tokens=reports, metrics_tokens=scraper).status_code == 200


def test_an_app_made_again_serves_its_own_collector_s_figures() -> None:
    first, second = Collector(1, "first-run"), Collector(3, "second-run")
    assert 'run="first-run"' in _scrape(first, {}).text
    # Made again in the same process: registered once, and the figures are the new collector's.
    text = _scrape(second, {}).text
    assert 'run="second-run"' in text and 'run="first-run"' not in text
    assert 'loadtest_workers{run="second-run",status="waiting"} 3.0' in text
