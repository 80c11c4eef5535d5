"""The latency histograms' bucket layout, and exemplars: a request's trace id on its sample.

A dashboard's latency panel then links a slow bucket to one request's trace (Grafana shows
exemplars as dots; Prometheus keeps them with ``--enable-feature=exemplar-storage`` and scrapes
them in the OpenMetrics exposition, which ``/metrics`` serves when asked for it).

prometheus_client drops exemplars in multi-process mode (gunicorn), so :func:`observe` also keeps
the latest exemplar of every bucket in this process; the scrape merges them into the summed
histograms (``services.telemetry.multiprocess``). With several workers, the exemplars are the
answering worker's: a sample of the traces, which is all exemplars ever are.

The bucket layout lives here, under the exemplars kept per bucket, rather than in
``services.telemetry.metrics``, which re-exports it: that module imports this one (through the
multi-process merge), so defining it there would make an import cycle.
"""

from __future__ import annotations

import bisect
import time
from functools import cache

from prometheus_client import Histogram
from prometheus_client.samples import Exemplar
from prometheus_client.utils import floatToGoString

from services.telemetry.tracing import current_trace_id

# Latency buckets in seconds, of every latency histogram of the services: dense where searches
# and answers fall, with an edge at every threshold an SLO or alert uses (docs/observability.md),
# so "the share of requests under X" is exact rather than interpolated inside a doubling bucket.
LATENCY_BUCKETS = (
    0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.25, 0.35, 0.5, 0.75, 1.0, 2.5,
    5.0, 10.0, 30.0, 60.0,
)  # fmt: skip

#: (histogram name, sorted label pairs without ``le``, ``le``) -> the latest exemplar there.
_latest: dict[tuple[str, tuple[tuple[str, str], ...], str], Exemplar] = {}
_BOUNDS = [floatToGoString(b) for b in LATENCY_BUCKETS]  # type: ignore[no-untyped-call]


def trace_exemplar() -> dict[str, str] | None:
    """The current span's trace id as exemplar labels, if it is being recorded."""
    trace_id = current_trace_id()
    return None if trace_id is None else {"trace_id": trace_id}


@cache
def _name(histogram: Histogram) -> str:
    (family,) = histogram.describe()
    return str(family.name)


def observe(histogram: Histogram, seconds: float, **labels: str) -> None:
    """``histogram.labels(**labels).observe(seconds)`` with the current trace as exemplar.

    Every histogram passed here uses ``LATENCY_BUCKETS``.
    """
    exemplar = trace_exemplar()
    child = histogram.labels(**labels) if labels else histogram
    child.observe(seconds, exemplar)
    if exemplar is not None:
        i = bisect.bisect_left(LATENCY_BUCKETS, seconds)
        le = _BOUNDS[i] if i < len(_BOUNDS) else "+Inf"
        key = (_name(histogram), tuple(sorted(labels.items())), le)
        _latest[key] = Exemplar(exemplar, seconds, time.time())


def latest(name: str, labels: dict[str, str]) -> Exemplar | None:
    """The exemplar :func:`observe` kept for one bucket sample (``labels`` include ``le``)."""
    series = tuple(sorted((k, v) for k, v in labels.items() if k != "le"))
    return _latest.get((name, series, labels.get("le", "")))
