"""An OTLP trace receiver on loopback, over gRPC and HTTP/protobuf, built on the official protos.

It does what a collector's OTLP receiver does with an export (decode ``ExportTraceServiceRequest``
and acknowledge it) and keeps the spans for the test to read.
"""

from __future__ import annotations

import threading
from concurrent import futures
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import grpc
from opentelemetry.proto.collector.trace.v1 import trace_service_pb2, trace_service_pb2_grpc

from harness.processes import free_port


@dataclass(frozen=True)
class ReceivedSpan:
    """One exported span, with the resource it came from."""

    service: str
    resource: dict[str, str]
    name: str
    trace_id: str
    span_id: str
    parent_id: str


class OtlpReceiver(trace_service_pb2_grpc.TraceServiceServicer):
    """OTLP/gRPC at :attr:`grpc_endpoint`, OTLP/HTTP at :attr:`http_endpoint` (``/v1/traces``)."""

    def __init__(self) -> None:
        self.spans: list[ReceivedSpan] = []
        self._lock = threading.Lock()
        grpc_port, http_port = free_port(), free_port()
        self.grpc_endpoint = f"http://127.0.0.1:{grpc_port}"
        self.http_endpoint = f"http://127.0.0.1:{http_port}"
        self._grpc = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        trace_service_pb2_grpc.add_TraceServiceServicer_to_server(self, self._grpc)  # type: ignore[no-untyped-call]
        self._grpc.add_insecure_port(f"127.0.0.1:{grpc_port}")
        self._http = ThreadingHTTPServer(("127.0.0.1", http_port), self._http_handler())

    def _keep(self, request: Any) -> None:
        with self._lock:
            for resource_spans in request.resource_spans:
                resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        self.spans.append(
                            ReceivedSpan(
                                service=resource.get("service.name", ""),
                                resource=resource,
                                name=span.name,
                                trace_id=span.trace_id.hex(),
                                span_id=span.span_id.hex(),
                                parent_id=span.parent_span_id.hex(),
                            )
                        )

    def Export(self, request: Any, context: Any) -> Any:
        """OTLP/gRPC export."""
        self._keep(request)
        return trace_service_pb2.ExportTraceServiceResponse()

    def _http_handler(self) -> type[BaseHTTPRequestHandler]:
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                request = trace_service_pb2.ExportTraceServiceRequest()
                request.ParseFromString(body)
                receiver._keep(request)
                answer = trace_service_pb2.ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                pass

        return Handler

    def __enter__(self) -> OtlpReceiver:
        self._grpc.start()
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_: object) -> None:
        self._grpc.stop(grace=None)
        self._http.shutdown()
        self._http.server_close()

    def of_trace(self, trace_id: str) -> list[ReceivedSpan]:
        """The spans received so far of one trace."""
        with self._lock:
            return [s for s in self.spans if s.trace_id == trace_id]
