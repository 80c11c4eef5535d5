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
from contextlib import AbstractContextManager, nullcontext
from importlib import metadata
from typing import Any

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.sampling import (
    DEFAULT_OFF,
    DEFAULT_ON,
    Sampler,
    SamplingResult,
)

_configured = False


class RecordWhenExported(Sampler):
    """Record every trace once something receives spans; until then only the callers' traces.

    A span nobody exports still costs its recording, about a dozen per search (docs/performance.md
    measures it with ``devtools.bench.pair``, the sampler off against on). Unexported, a process starts no trace of its own, but a request whose caller sent a
    sampled ``traceparent`` is still recorded, for the exemplars and the task's ``trace_id``
    the caller asked for. Either way the trace context travels (sampled or not), so the log
    lines of one request carry the same ``trace_id`` in every service.
    """

    def __init__(self) -> None:
        """Not exported yet: :meth:`exported` switches it."""
        self._delegate: Sampler = DEFAULT_OFF

    def exported(self) -> None:
        """Spans have a receiver now: record every trace (parent-based, as the SDK's default)."""
        self._delegate = DEFAULT_ON

    def should_sample(self, *args: Any, **kwargs: Any) -> SamplingResult:
        """The decision of the current delegate."""
        return self._delegate.should_sample(*args, **kwargs)

    def get_description(self) -> str:
        """Names the delegate, as the SDK's own samplers describe themselves."""
        return f"RecordWhenExported{{{self._delegate.get_description()}}}"


_sampler: RecordWhenExported | None = None


def setup_tracing(service_name: str) -> None:
    """Install a tracer provider for this process, exporting over OTLP when configured.

    The sampler is the SDK's (``OTEL_TRACES_SAMPLER``, parent-based always-on by default) when
    spans are exported or that variable is set, :class:`RecordWhenExported` otherwise.
    """
    global _configured, _sampler
    if _configured:
        return
    _configured = True
    endpoint = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") or os.environ.get(
        "OTEL_EXPORTER_OTLP_ENDPOINT"
    )
    if not (endpoint or os.environ.get("OTEL_TRACES_SAMPLER")):
        _sampler = RecordWhenExported()
    provider = TracerProvider(
        resource=Resource.create(resource_attributes(service_name)), sampler=_sampler
    )
    if endpoint:
        provider.add_span_processor(BatchSpanProcessor(span_exporter()))
    trace.set_tracer_provider(provider)


def export_spans(processor: SpanProcessor) -> None:
    """Hand every span ended from now on to ``processor`` too, and record every trace."""
    provider = trace.get_tracer_provider()
    if not isinstance(provider, TracerProvider):
        raise RuntimeError("setup_tracing() installs the tracer provider first")
    provider.add_span_processor(processor)
    if _sampler is not None:
        _sampler.exported()


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


def stage(tracer: trace.Tracer, name: str, **kwargs: Any) -> AbstractContextManager[trace.Span]:
    """A span for one stage of a request; inside an unrecorded request, none.

    A stage of an unrecorded request would not be recorded either, under every sampler the SDK
    offers (parent-based ones follow the parent; by trace id, the stage has the parent's id),
    but starting it still costs bookkeeping (docs/performance.md), and a search has a dozen
    stages.
    The request's trace context stays current, so log lines and outgoing calls still carry its
    trace id. Outside any span (a tool calling the pipeline, a client used on its own) the stage
    starts a trace of its own, as any span does. The ``with`` target is a span either way.
    """
    current = trace.get_current_span()
    if current.get_span_context().is_valid and not current.is_recording():
        return nullcontext(current)
    return tracer.start_as_current_span(name, **kwargs)


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
