"""Spans are recorded only where they go somewhere: :class:`RecordWhenExported`."""

from __future__ import annotations

import os
import subprocess
import sys

from opentelemetry import context, trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import SamplingResult
from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

from services.telemetry.tracing import RecordWhenExported, current_trace_id, stage

CALLER_TRACE = 0xAB * (2**120 // 0xFF)  # any valid trace id


def _caller(sampled: bool) -> context.Context:
    """The context of a request whose caller sent a ``traceparent``."""
    flags = TraceFlags(TraceFlags.SAMPLED if sampled else TraceFlags.DEFAULT)
    span = NonRecordingSpan(SpanContext(CALLER_TRACE, 0x1234, is_remote=True, trace_flags=flags))
    return trace.set_span_in_context(span)


def _provider() -> tuple[RecordWhenExported, trace.Tracer, InMemorySpanExporter]:
    sampler = RecordWhenExported()
    provider = TracerProvider(sampler=sampler)
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return sampler, provider.get_tracer("test"), exporter


def test_unexported_a_process_starts_no_trace_but_its_context_still_travels() -> None:
    _, tracer, exporter = _provider()
    with tracer.start_as_current_span("root") as root, tracer.start_as_current_span("child"):
        assert not root.is_recording()
        ids = root.get_span_context()
        assert ids.is_valid and not ids.trace_flags.sampled  # a trace id for the log lines
        assert trace.get_current_span().get_span_context().trace_id == ids.trace_id
        assert current_trace_id() is None  # no exemplar, no task trace id: nothing to find
    with tracer.start_as_current_span("untraced caller", context=_caller(False)) as span:
        assert not span.is_recording()
        assert span.get_span_context().trace_id == CALLER_TRACE
    assert exporter.get_finished_spans() == ()


def test_unexported_a_caller_s_sampled_trace_is_still_recorded() -> None:
    _, tracer, exporter = _provider()
    with tracer.start_as_current_span("traced caller", context=_caller(True)) as span:
        assert span.is_recording()
        assert current_trace_id() == f"{CALLER_TRACE:032x}"
    assert [s.name for s in exporter.get_finished_spans()] == ["traced caller"]


def test_exported_every_trace_is_recorded() -> None:
    sampler, tracer, exporter = _provider()
    sampler.exported()
    with tracer.start_as_current_span("root") as root:
        assert root.is_recording()
    with tracer.start_as_current_span("untraced caller", context=_caller(False)) as span:
        assert not span.is_recording()  # the caller's decision stands, as parent-based says
    assert [s.name for s in exporter.get_finished_spans()] == ["root"]
    assert (
        sampler.get_description()
        == "RecordWhenExported{ParentBased{root:AlwaysOnSampler,remoteParentSampled:AlwaysOnSampler,remoteParentNotSampled:AlwaysOffSampler,localParentSampled:AlwaysOnSampler,localParentNotSampled:AlwaysOffSampler}}"
    )


class _Asked(RecordWhenExported):
    """Counts the decisions it is asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.asked = 0

    def should_sample(self, *args: object, **kwargs: object) -> SamplingResult:
        self.asked += 1
        return super().should_sample(*args, **kwargs)


def test_a_stage_of_an_unrecorded_request_starts_no_span_and_one_alone_starts_a_trace() -> None:
    sampler = _Asked()
    tracer = TracerProvider(sampler=sampler).get_tracer("test")
    with (
        tracer.start_as_current_span("request") as request,
        stage(tracer, "stage", attributes={"a": 1}) as span,
    ):
        assert span is request  # the ``with`` target is still a span, the current one
        span.set_attribute("ignored", 1)  # a no-op on an unrecorded span
        assert trace.get_current_span() is request
    assert sampler.asked == 1  # the request's decision only
    with stage(tracer, "outside any request") as span:
        assert span.get_span_context().is_valid  # a trace of its own, to pass on
    assert sampler.asked == 2


def test_a_stage_of_a_recorded_request_is_its_child() -> None:
    sampler, tracer, exporter = _provider()
    sampler.exported()
    with (
        tracer.start_as_current_span("request") as request,
        stage(tracer, "stage", attributes={"a": 1}) as span,
    ):
        assert span is not request and span.is_recording()
    child, parent = exporter.get_finished_spans()
    assert (child.name, parent.name) == ("stage", "request")
    assert child.parent is not None and child.parent.span_id == parent.context.span_id
    assert dict(child.attributes or {}) == {"a": 1}


PROBE = """
import os, sys
from opentelemetry import trace
from services.telemetry.tracing import setup_tracing
setup_tracing("probe")
with trace.get_tracer("probe").start_as_current_span("root") as span:
    print(span.is_recording(), trace.get_tracer_provider().sampler.get_description())
sys.stdout.flush()
os._exit(0)  # no export at exit: the endpoint below answers nothing
"""


def _probe(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("OTEL_")}
    done = subprocess.run(
        [sys.executable, "-c", PROBE], env={**clean, **env}, capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_setup_tracing_chooses_the_sdk_s_sampler_when_spans_are_exported_or_one_is_named() -> None:
    assert _probe().startswith("False RecordWhenExported{ParentBased{root:AlwaysOffSampler")
    # The span is recorded before any export is tried (none is: see PROBE).
    exported = _probe(OTEL_EXPORTER_OTLP_ENDPOINT="http://127.0.0.1:9")
    assert exported.startswith("True ParentBased{root:AlwaysOnSampler")
    assert _probe(OTEL_TRACES_SAMPLER="always_on") == "True AlwaysOnSampler"
