"""OpenTelemetry tracing set-up shared by the services.

Spans are exported over OTLP (gRPC or HTTP/protobuf, as ``OTEL_EXPORTER_OTLP_PROTOCOL`` says)
only when ``OTEL_EXPORTER_OTLP_ENDPOINT`` (or the traces-specific variable) is set, so a laptop
run costs nothing; the standard ``OTEL_*`` variables configure the exporter, which is what the
Helm chart passes through. W3C trace context travels in HTTP headers
(``traceparent``), carried by :func:`inject_headers` on the client side and
:func:`extract_context` on the server side.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from importlib import metadata

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter

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
    provider = TracerProvider(resource=Resource.create(resource_attributes(service_name)))
    if endpoint:
        provider.add_span_processor(BatchSpanProcessor(span_exporter()))
    trace.set_tracer_provider(provider)


def resource_attributes(service_name: str) -> dict[str, str]:
    """Who exports: service name and version, and the deployment environment.

    ``OTEL_RESOURCE_ATTRIBUTES`` (the chart's ``otel.resourceAttributes``) adds to these; the
    environment defaults to ``local`` unless it names one.
    """
    attributes = {
        "service.name": os.environ.get("OTEL_SERVICE_NAME", service_name),
        "service.version": _version(),
    }
    if "deployment.environment" not in os.environ.get("OTEL_RESOURCE_ATTRIBUTES", ""):
        attributes["deployment.environment.name"] = "local"
    return attributes


def _version() -> str:
    try:
        return metadata.version("nfcorpus-retrieval")
    except metadata.PackageNotFoundError:
        return "unknown"


def span_exporter() -> SpanExporter:
    """The OTLP exporter of ``OTEL_EXPORTER_OTLP_[TRACES_]PROTOCOL``.

    grpc (the default) or http/protobuf; both read the other ``OTEL_EXPORTER_OTLP_*`` themselves.
    """
    protocol = (
        os.environ.get("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL")
        or os.environ.get("OTEL_EXPORTER_OTLP_PROTOCOL")
        or "grpc"
    )
    # Imported lazily: exporter start-up is not free and most local runs do not export.
    if protocol == "grpc":
        from opentelemetry.exporter.otlp.proto.grpc.trace_exporter import OTLPSpanExporter

        return OTLPSpanExporter()
    if protocol == "http/protobuf":
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
            OTLPSpanExporter as HttpSpanExporter,
        )

        return HttpSpanExporter()
    raise ValueError(
        f"OTEL_EXPORTER_OTLP_PROTOCOL={protocol!r} is not supported: use grpc or http/protobuf"
    )


def tracer(name: str) -> trace.Tracer:
    """The tracer for one module."""
    return trace.get_tracer(name)


def current_trace_id() -> str | None:
    """The trace id of the span being recorded now (32 hex digits), or None outside one."""
    context = trace.get_current_span().get_span_context()
    if not (context.is_valid and context.trace_flags.sampled):
        return None
    return f"{context.trace_id:032x}"


def inject_headers(headers: dict[str, str] | None = None) -> dict[str, str]:
    """Return ``headers`` with the current trace context added (``traceparent``)."""
    carrier = dict(headers or {})
    propagate.inject(carrier)
    return carrier


def extract_context(headers: Mapping[str, str]) -> Context:
    """The trace context an incoming request carries, to parent this service's spans."""
    return propagate.extract(dict(headers))
