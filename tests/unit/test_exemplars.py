"""Exemplars: a latency sample carries its request's trace id, in the OpenMetrics exposition."""

from __future__ import annotations

from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from prometheus_client import CollectorRegistry, Histogram
from prometheus_client.openmetrics.exposition import generate_latest

from services.telemetry import exemplars
from services.telemetry.metrics import LATENCY_BUCKETS
from services.telemetry.tracing import export_spans, setup_tracing, tracer

setup_tracing("tests")
# Spans are recorded, as in a process that exports them: without an exporter a process records
# none of its own (RecordWhenExported), and this module's spans would carry no exemplar whenever
# it ran before another module that installs one.
export_spans(SimpleSpanProcessor(InMemorySpanExporter()))
_tracer = tracer(__name__)


def _histogram() -> tuple[Histogram, CollectorRegistry]:
    registry = CollectorRegistry()
    histogram = Histogram(
        "demo_seconds", "demo", ["outcome"], buckets=LATENCY_BUCKETS, registry=registry
    )
    return histogram, registry


def test_a_sample_in_a_span_carries_its_trace_id() -> None:
    histogram, registry = _histogram()
    with _tracer.start_as_current_span("request") as span:
        exemplars.observe(histogram, 0.03, outcome="ok")
        trace_id = f"{span.get_span_context().trace_id:032x}"
    exemplars.observe(histogram, 0.03, outcome="failed")  # outside any span: none
    lines = generate_latest(registry).decode().splitlines()  # type: ignore[no-untyped-call]
    (bucket,) = [
        line for line in lines if line.startswith('demo_seconds_bucket{le="0.05",outcome="ok"}')
    ]
    assert f'# {{trace_id="{trace_id}"}} 0.03' in bucket
    failed = [line for line in lines if 'outcome="failed"' in line and "#" in line]
    assert failed == []
    # Kept apart too, for the multi-process scrape, under the bucket's le.
    kept = exemplars.latest("demo_seconds", {"outcome": "ok", "le": "0.05"})
    assert kept is not None and kept.labels == {"trace_id": trace_id}


def test_a_sample_beyond_the_last_edge_is_in_the_inf_bucket() -> None:
    histogram, _ = _histogram()
    with _tracer.start_as_current_span("slow"):
        exemplars.observe(histogram, 75.0, outcome="ok")
    kept = exemplars.latest("demo_seconds", {"outcome": "ok", "le": "+Inf"})
    assert kept is not None and kept.value == 75.0
