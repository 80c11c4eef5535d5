"""OpenTelemetry tracing set-up shared by the services.

Spans are exported over OTLP/gRPC only when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or the traces-specific
variable) is set, so a laptop run costs nothing; the standard ``OTEL_*`` variables configure the
exporter, which is what the Helm chart passes through. W3C trace context travels in HTTP headers
(``traceparent``), carried by :func:`inject_headers` on the client side and
:func:`extract_context` on the server side.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

_configured = False


def setup_tracing(service_name: str) -> None:
    """Install a tracer provider for this process, exporting over OTLP when configured."""
    global _configured
    if _configured:
        return
    _configured = True
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    provider = TracerProvider(
        resource=Resource.create(
            {"service.name": os.environ.get("OTEL_SERVICE_NAME", service_name)}
        )
    )
    if endpoint:
        # Imported lazily: grpc start-up is not free and most local runs do not export.
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    trace.set_tracer_provider(provider)


def tracer(name: str) -> trace.Tracer:
    """The tracer for one module."""
    return trace.get_tracer(name)


def inject_headers(headers: dict[str, str] | None = None) -> dict[str, str]:
    """Return ``headers`` with the current trace context added (``traceparent``)."""
    carrier = dict(headers or {})
    propagate.inject(carrier)
    return carrier


def extract_context(headers: Mapping[str, str]) -> Context:
    """The trace context an incoming request carries, to parent this service's spans."""
    return propagate.extract(dict(headers))
