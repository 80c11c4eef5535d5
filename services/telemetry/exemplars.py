"""Exemplars: the trace id of a request on the latency sample it produced.

A dashboard's latency panel then links a slow bucket to one request's trace (Grafana shows
exemplars as dots; Prometheus keeps them with ``--enable-feature=exemplar-storage`` and scrapes
them in the OpenMetrics exposition, which ``/metrics`` serves when asked for it).

prometheus_client drops exemplars in multi-process mode (gunicorn), so :func:`observe` also keeps
the latest exemplar of every bucket in this process; the scrape merges them into the summed
histograms (``services.telemetry.multiprocess``). With several workers, the exemplars are the
answering worker's: a sample of the traces, which is all exemplars ever are.
"""

from __future__ import annotations

import bisect
import time
from functools import cache

from prometheus_client import Histogram
from prometheus_client.samples import Exemplar
from prometheus_client.utils import floatToGoString

from services.telemetry.buckets import LATENCY_BUCKETS
from services.telemetry.tracing import current_trace_id

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
