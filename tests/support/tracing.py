"""Spans of the code under test, collected in memory from the process's tracer provider."""

from __future__ import annotations

import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from services.telemetry.tracing import export_spans, setup_tracing


@contextmanager
def collected_spans() -> Iterator[InMemorySpanExporter]:
    """Every span ended inside the block (the provider is the services' own, set up once)."""
    setup_tracing("tests")
    exporter = InMemorySpanExporter()
    processor = SimpleSpanProcessor(exporter)
    export_spans(processor)
    try:
        yield exporter
    finally:
        processor.shutdown()  # the provider keeps it, but it exports nothing more


def finished(exporter: InMemorySpanExporter, name: str, count: int) -> Sequence[ReadableSpan]:
    """The spans so far, once ``count`` spans called ``name`` have ended (a server span ends
    just after its answer went out, so the client may read the answer first)."""
    deadline = time.monotonic() + 5
    while True:
        spans = exporter.get_finished_spans()
        if sum(s.name == name for s in spans) >= count or time.monotonic() > deadline:
            return spans
        time.sleep(0.02)
