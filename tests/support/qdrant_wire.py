"""A Qdrant server's wire, on loopback, recording what a client sends it (tests only: outside
the store, only tests may speak Qdrant's protocol, ``tests/unit/test_architecture_owners.py``).

No Qdrant server runs here, and qdrant-client's local mode ignores how a collection is laid out
(shards, copies, what stays on disk). So the real client is pointed at this fake: it serialises
what our store asks, REST (:class:`QdrantRest`) or gRPC (:class:`QdrantGrpc`), and the fake
records each request and answers the least a server would for the writes of a build: its
version, whether a collection exists, creating one, upserting points and counting them. Anything
else is a 404 with Qdrant's error shape, so a test sees at once what it did not expect.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit

import grpc
from qdrant_client import grpc as pb
from qdrant_client.grpc import collections_service_pb2_grpc, points_service_pb2_grpc

#: What the fake says it is: a server within one minor version of qdrant-client 1.20 (the
#: chart's image), so the client's compatibility check stays quiet.
VERSION = "1.19.1"


@dataclass(frozen=True)
class Request:
    """One REST request as the fake received it."""

    method: str
    path: str
    query: dict[str, list[str]]
    body: Any
    #: The body's length on the wire, in bytes.
    size: int


@dataclass
class Collections:
    """What the fake holds: the collections created and the point ids upserted into each."""

    points: dict[str, set[Any]] = field(default_factory=dict)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def create(self, name: str) -> None:
        """An empty collection ``name`` (kept as it is if it exists)."""
        with self.lock:
            self.points.setdefault(name, set())

    def add(self, name: str, ids: list[Any]) -> None:
        """Upsert ``ids`` into collection ``name``."""
        with self.lock:
            self.points.setdefault(name, set()).update(ids)

    def count(self, name: str) -> int:
        """The points of collection ``name``."""
        with self.lock:
            return len(self.points.get(name, ()))


def _ok(result: Any) -> dict[str, Any]:
    return {"result": result, "status": "ok", "time": 0.0}


_COLLECTION = re.compile(r"/collections/([^/]+)(/.*)?")
_COMPLETED = {"operation_id": 0, "status": "completed"}


class QdrantRest:
    """The REST API on a free loopback port; :attr:`url` to connect, :attr:`requests` seen."""

    def __init__(self) -> None:
        """Bind, without serving yet (:meth:`running`)."""
        self.requests: list[Request] = []
        self.held = Collections()
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                """Quiet: the requests are recorded, not logged."""

            def _answer(self) -> None:
                size = int(self.headers.get("content-length") or 0)
                raw = self.rfile.read(size) if size else b""
                url = urlsplit(self.path)
                body = json.loads(raw) if raw else None
                fake.requests.append(
                    Request(self.command, url.path, parse_qs(url.query), body, len(raw))
                )
                status, answer = fake.answer(self.command, url.path, body)
                data = json.dumps(answer).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_PUT = do_POST = do_DELETE = _answer

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def answer(self, method: str, path: str, body: Any) -> tuple[int, Any]:
        """The status and JSON a server would answer ``method path`` with."""
        if (method, path) == ("GET", "/"):
            return 200, {"title": "qdrant - vector search engine", "version": VERSION}
        found = _COLLECTION.fullmatch(path)
        if found is None:
            return 404, {"status": {"error": f"the fake has no {method} {path}"}, "time": 0.0}
        name, rest = found.group(1), found.group(2) or ""
        if (method, rest) == ("GET", "/exists"):
            return 200, _ok({"exists": name in self.held.points})
        if (method, rest) == ("PUT", ""):
            self.held.create(name)
            return 200, _ok(True)
        if (method, rest) == ("PUT", "/points"):
            self.held.add(name, [p["id"] for p in body["points"]])
            return 200, _ok(_COMPLETED)
        if (method, rest) == ("POST", "/points/count"):
            return 200, _ok({"count": self.held.count(name)})
        return 404, {"status": {"error": f"the fake has no {method} {path}"}, "time": 0.0}

    def sent(self, method: str, pattern: str) -> list[Request]:
        """The requests of ``method`` whose path matches ``pattern`` (a regular expression)."""
        return [r for r in self.requests if r.method == method and re.fullmatch(pattern, r.path)]

    @contextmanager
    def running(self) -> Iterator[QdrantRest]:
        """Serve on a thread until the block ends."""
        thread = threading.Thread(target=self._server.serve_forever, daemon=True)
        thread.start()
        try:
            yield self
        finally:
            self._server.shutdown()
            self._server.server_close()
            thread.join()


class _Collections(collections_service_pb2_grpc.CollectionsServicer):
    def __init__(self, fake: QdrantGrpc) -> None:
        self._fake = fake

    def Create(self, request: Any, context: Any) -> Any:
        self._fake.created.append(request)
        self._fake.held.create(request.collection_name)
        return pb.CollectionOperationResponse(result=True, time=0.0)


class _Points(points_service_pb2_grpc.PointsServicer):
    def __init__(self, fake: QdrantGrpc) -> None:
        self._fake = fake

    def Upsert(self, request: Any, context: Any) -> Any:
        self._fake.upserts.append(request)
        ids = [p.id.num if p.id.HasField("num") else p.id.uuid for p in request.points]
        self._fake.held.add(request.collection_name, ids)
        result = pb.UpdateResult(operation_id=0, status=pb.UpdateStatus.Completed)
        return pb.PointsOperationResponse(result=result, time=0.0)


class QdrantGrpc:
    """The gRPC API's collection creation and upserts on a free loopback port (:attr:`port`).

    :attr:`created` and :attr:`upserts` hold the requests as the client sent them (protobuf
    messages); any other call is answered UNIMPLEMENTED.
    """

    def __init__(self) -> None:
        """Bind, without serving yet (:meth:`running`)."""
        self.created: list[Any] = []
        self.upserts: list[Any] = []
        self.held = Collections()
        self._server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
        # qdrant-client ships its generated gRPC modules without type annotations.
        collections_service_pb2_grpc.add_CollectionsServicer_to_server(  # type: ignore[no-untyped-call]
            _Collections(self), self._server
        )
        points_service_pb2_grpc.add_PointsServicer_to_server(  # type: ignore[no-untyped-call]
            _Points(self), self._server
        )
        self.port = self._server.add_insecure_port("127.0.0.1:0")

    @contextmanager
    def running(self) -> Iterator[QdrantGrpc]:
        """Serve until the block ends."""
        self._server.start()
        try:
            yield self
        finally:
            self._server.stop(grace=None).wait()


#: A layout for three nodes: six shards in two copies each, both copies written before a write
#: succeeds; the documents' vectors and payloads on disk, their int8 copies in memory.
THREE_NODES = {
    "qdrant_shards": 6,
    "qdrant_replication_factor": 2,
    "qdrant_write_consistency_factor": 2,
    "qdrant_nodes": 3,
    "qdrant_on_disk_vectors": True,
    "qdrant_on_disk_payload": True,
    "quantization_always_ram": True,
}
