"""Spans of the code under test, collected in memory from the process's tracer provider."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.telemetry.tracing import setup_tracing


@contextmanager
def collected_spans() -> Iterator[InMemorySpanExporter]:
    """Every span ended inside the block (the provider is the services' own, set up once)."""
    setup_tracing("tests")
    provider = trace.get_tracer_provider()
    assert isinstance(provider, TracerProvider)
    exporter = InMemorySpanExporter()
    processor = SimpleSpanProcessor(exporter)
    provider.add_span_processor(processor)
    try:
        yield exporter
    finally:
        processor.shutdown()  # the provider keeps it, but it exports nothing more
