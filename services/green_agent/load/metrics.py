"""The load test's client side at the collector's ``/metrics``: what the generators measured.

The generators of a cluster run are the pods of an Indexed Job: they come and go, and Prometheus
would lose a pod's figures with the pod. The collector holds every worker's latest figures (its
snapshots while it runs, then its final report: :mod:`~services.green_agent.load.collector`),
so it serves them, read at scrape time (:class:`LoadTestMetrics`):

- ``loadtest_requests_total{run, worker, outcome}``: requests that ended, ``answered`` (the reply
  met the answer contract) or ``failed``;
- ``loadtest_request_failures_total{run, worker, reason}``: the failed ones by the generator's
  reason (``timeout``, ``overloaded``, ``contract``, ...); a reason's series appears with its
  first failure, since the reasons are the evaluator's and not a fixed list;
- ``loadtest_requests_dropped_total{run, worker}``: requests an open loop never sent (its
  ``--max-in-flight`` was full);
- ``loadtest_request_duration_seconds{run, worker}``: the answers' latency as the client saw it,
  in the services' own buckets (:data:`~services.telemetry.metrics.LATENCY_BUCKETS`), so
  ``histogram_quantile()`` reads it as it reads the servers' histograms;
- ``loadtest_requests_in_flight{run, worker}``: requests in flight, the mean over the worker's
  latest timeline bucket (0 once it finished or was cut short);
- ``loadtest_workers{run, status}``: the run's workers ``waiting`` (nothing reported yet),
  ``running``, ``finished`` and ``cut_short``; ``loadtest_run_complete{run}``: 1 once the run
  is complete.

The counters and the histogram are cumulative over the run, so ``rate()`` and ``increase()`` work
on them as on a server's. They are kept per worker, as a server's are per pod: a worker's retried
pod starts its figures again (its new process's reports replace the old one's), which Prometheus
reads as the counter reset of a restarted process, so ``increase()`` still counts the requests of
both pods (the collector's report keeps the new pod's only). A collector that restarts takes its
kept reports back, and its counters go on from where they were. Every series of every worker
exists from the collector's start, at 0 until the worker's first report: ``rate()`` sees the first
requests only if the series existed before them.

Registered once per process with the default registry (:func:`serve_load_metrics`); the
collector runs as one process (``load-collect``), never under gunicorn's multi-process metrics.
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from itertools import accumulate

from prometheus_client import REGISTRY
from prometheus_client.metrics_core import (
    CounterMetricFamily,
    GaugeMetricFamily,
    HistogramMetricFamily,
    Metric,
)
from prometheus_client.utils import floatToGoString

from services.green_agent.load.collector import Collector
from services.green_agent.load.report import LoadReport
from services.telemetry.metrics import LATENCY_BUCKETS

#: The ``le`` of each bucket as the servers' histograms write it (``1.0``, not ``1``): a query
#: that names a bucket (``le="1.0"``) reads both alike.
BUCKET_BOUNDS = (*(floatToGoString(b) for b in LATENCY_BUCKETS), "+Inf")  # type: ignore[no-untyped-call]
#: What a worker may be, in the order the gauge lists them.
WORKER_STATUSES = ("waiting", "running", "finished", "cut_short")
_WORKER = ["run", "worker"]


class LoadTestMetrics:
    """A prometheus_client collector of the figures a :class:`Collector` holds, at scrape time."""

    def __init__(self, source: Collector | None = None) -> None:
        """Read ``source`` at each scrape (None: nothing to serve yet)."""
        self.source = source

    def describe(self) -> Iterable[Metric]:
        """The families, without samples: what the registry checks names against."""
        return _families()

    def collect(self) -> Iterable[Metric]:
        """Every family, with a sample per worker of the source's run."""
        source = self.source
        if source is None:
            return []
        # One read of each: the collector replaces them whole while a report merges.
        reports, cut_short = source.reports, source.cut_short
        requests, failures, dropped, duration, in_flight, workers, complete = _families()
        statuses = dict.fromkeys(WORKER_STATUSES, 0)
        for worker in range(source.workers):
            labels = [source.run, str(worker)]
            report = reports.get(worker)
            status = _status(report, worker in cut_short)
            statuses[status] += 1
            answered = report.ok if report else 0
            requests.add_metric([*labels, "answered"], answered)
            requests.add_metric([*labels, "failed"], report.errors if report else 0)
            dropped.add_metric(labels, report.dropped if report else 0)
            for reason, count in sorted((report.errors_by_reason if report else {}).items()):
                failures.add_metric([*labels, reason], count)
            duration.add_metric(labels, _buckets(report), report.latencies.sum_s if report else 0)
            in_flight.add_metric(labels, _in_flight(report) if status == "running" else 0.0)
        for status, count in statuses.items():
            workers.add_metric([source.run, status], count)
        complete.add_metric([source.run], 1 if source.complete else 0)
        return [requests, failures, dropped, duration, in_flight, workers, complete]


def _families() -> tuple[
    CounterMetricFamily,
    CounterMetricFamily,
    CounterMetricFamily,
    HistogramMetricFamily,
    GaugeMetricFamily,
    GaugeMetricFamily,
    GaugeMetricFamily,
]:
    return (
        CounterMetricFamily(
            "loadtest_requests_total",
            "Load test requests that ended, by worker and outcome (answered: the reply met the "
            "answer contract; failed), as the generators saw them.",
            labels=[*_WORKER, "outcome"],
        ),
        CounterMetricFamily(
            "loadtest_request_failures_total",
            "Load test requests that failed, by worker and the generator's reason.",
            labels=[*_WORKER, "reason"],
        ),
        CounterMetricFamily(
            "loadtest_requests_dropped_total",
            "Load test requests an open loop never sent: its max in flight was full.",
            labels=_WORKER,
        ),
        HistogramMetricFamily(
            "loadtest_request_duration_seconds",
            "Latency of the load test's answers as the generators saw them, by worker.",
            labels=_WORKER,
        ),
        GaugeMetricFamily(
            "loadtest_requests_in_flight",
            "Load test requests in flight: the mean over the worker's latest timeline bucket.",
            labels=_WORKER,
        ),
        GaugeMetricFamily(
            "loadtest_workers",
            "Workers of the load run by status (waiting: nothing reported yet; running; "
            "finished; cut_short: fell silent).",
            labels=["run", "status"],
        ),
        GaugeMetricFamily(
            "loadtest_run_complete",
            "1 once every worker of the load run has reported its end or was cut short.",
            labels=["run"],
        ),
    )


def _status(report: LoadReport | None, cut_short: bool) -> str:
    if report is None:
        return "waiting"
    if cut_short:
        return "cut_short"
    return "running" if report.partial else "finished"


def _buckets(report: LoadReport | None) -> list[tuple[str, float]]:
    """Cumulative counts under each bound: the report's display bins have the same edges."""
    counts = [b.count for b in report.latency_histogram] if report else [0] * len(BUCKET_BOUNDS)
    return list(zip(BUCKET_BOUNDS, map(float, accumulate(counts)), strict=True))


def _in_flight(report: LoadReport | None) -> float:
    timeline = report.timeline if report else []
    return timeline[-1].in_flight if timeline else 0.0


@functools.cache
def _registered() -> LoadTestMetrics:
    """The one collector of this process's default registry (registering twice is an error)."""
    metrics = LoadTestMetrics()
    REGISTRY.register(metrics)
    return metrics


def serve_load_metrics(collector: Collector) -> None:
    """Serve ``collector``'s figures at this process's ``/metrics``.

    A process serves one collector's: an app factory run again (tests) points them at its own.
    """
    _registered().source = collector
