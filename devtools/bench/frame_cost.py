"""What is ours around a search, in CPU per request: the frame and the search service.

``python -m devtools.bench.frame_cost [--rounds 6] [--queries 200] [--out reports/frame_cost.json]``

Two parts of the MCP server are ours and wrap every search; each is measured in-process, on the
real code, against the same work without it, in alternated rounds (the median of the rounds'
differences):

- **the frame** (:func:`services.common.frame.service_app`: the drain check, the request's span,
  latency sample and log line (JSON, written to ``/dev/null``), the guard's admission, body
  read, JSON checks and disconnect watcher) around a route that only reads its JSON body and
  answers, against that route alone.
  Both are called as ASGI apps, with no socket, so uvicorn's own work is in neither;
- **the search service** (:class:`services.mcp_server.service.SearchService`: the thread
  limiter, the hand-off to the search thread and back, the search, encode and retrieve spans,
  the stage and store-call metrics, the counted store) against the pipeline it runs, called
  directly in this thread (encode, then rank).

Each is measured twice, in a fresh process each: with spans unexported (the default without
an OTLP endpoint: nothing recorded) and exported (recorded and queued for export; the exporter
drops them, so what an OTLP exporter's thread spends encoding and sending is not counted).
The purple agent's and the MCP SDK's frames are the SDKs' (``mcp_cpu`` measures the latter).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Sequence
from pathlib import Path
from typing import Any

from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from harness.processes import BASE_ENV, REPO
from services.common.frame import ServiceId, service_app
from services.mcp_server.metrics import observe_store_call
from services.mcp_server.schemas import SearchRequest
from services.mcp_server.service import SearchService
from services.nfcorpus.dataset import load_qrels, load_queries
from services.retrieval.encoders.dense import OnnxMiniLM
from services.retrieval.query.pipeline import RankAsk, RankingPipeline
from services.retrieval.settings import RetrievalSettings
from services.retrieval.store import open_store
from services.retrieval.store.counting import CountingStore
from services.telemetry.logging import setup_logging
from services.telemetry.tracing import export_spans, setup_tracing

#: What the purple agent asks the MCP server: 20 candidates, no abstracts.
TOP_K = 20
PATH = "/search_nfcorpus"
BODY = json.dumps({"query": "green tea and prostate cancer", "top_k": TOP_K}).encode()
FRAME_REQUESTS = 2000
MODES = ("unexported", "exported")


class _Dropped(SpanExporter):
    """An exporter that takes every batch and keeps nothing."""

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Drop the batch."""
        return SpanExportResult.SUCCESS


async def _answer(request: Request) -> Response:
    payload = json.loads(await request.body())
    return Response(json.dumps({"results": [payload]}), media_type="application/json")


def _scope() -> dict[str, Any]:
    headers = [
        (b"host", b"127.0.0.1:8000"),
        (b"content-type", b"application/json"),
        (b"content-length", str(len(BODY)).encode()),
    ]
    return {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": PATH,
        "raw_path": PATH.encode(),
        "root_path": "",
        "query_string": b"",
        "headers": headers,
        "client": ("127.0.0.1", 50000),
        "server": ("127.0.0.1", 8000),
        "state": {},
    }


async def _request(app: Callable[..., Awaitable[None]]) -> None:
    """One POST through ``app`` as uvicorn would hand it over; the answer must be a 200."""
    body_sent = False
    messages: list[dict[str, Any]] = []

    async def receive() -> dict[str, Any]:
        nonlocal body_sent
        if not body_sent:
            body_sent = True
            return {"type": "http.request", "body": BODY, "more_body": False}
        await asyncio.Event().wait()  # the client stays: no disconnect
        raise AssertionError("unreachable")

    async def send(message: dict[str, Any]) -> None:
        messages.append(message)

    await app(_scope(), receive, send)
    if messages[0]["status"] != 200:
        raise RuntimeError(f"the route answered {messages[0]}")


async def _requests_us(app: Callable[..., Awaitable[None]], n: int) -> float:
    started = time.process_time()
    for _ in range(n):
        await _request(app)
    return (time.process_time() - started) / n * 1e6


def _texts(settings: RetrievalSettings, n: int) -> list[str]:
    queries = load_queries(settings.data_dir)
    dev = [queries[q] for q in sorted(load_qrels(settings.data_dir, "dev")) if q in queries]
    return dev[:n]


async def _measure(rounds: int, queries: int) -> dict[str, list[float]]:
    """The rounds of one process: the frame and the service, each against the work without it."""
    routes = [Route(PATH, _answer, methods=["POST"])]
    bare = Starlette(routes=routes)
    framed = service_app(ServiceId(metric_prefix="bench", trace_name="frame-cost"), routes)
    settings = RetrievalSettings()
    texts = _texts(settings, queries)
    store = open_store(settings.store.model_copy(update={"edge_private_copy": True}))
    try:
        counted = CountingStore(store, observe=observe_store_call)
        encoder = OnnxMiniLM(threads=1)
        pipeline = RankingPipeline(store, encoder, settings)
        service = SearchService(RankingPipeline(counted, encoder, settings), counted, threads=2)

        def pipeline_ms() -> float:
            started = time.process_time()  # every thread: the service's searches run in another
            for text in texts:
                (encoded,) = pipeline.encode_many([text])
                pipeline.rank_many([RankAsk(encoded, TOP_K, include_text=False)])
            return (time.process_time() - started) / len(texts) * 1000

        async def service_ms() -> float:
            started = time.process_time()
            for text in texts:
                request = SearchRequest(query=text, top_k=TOP_K, include_text=False)
                await service.search(request, via="rest")
            return (time.process_time() - started) / len(texts) * 1000

        out: dict[str, list[float]] = {k: [] for k in ("bare", "framed", "pipeline", "service")}
        for app in (bare, framed):  # warm-up
            await _requests_us(app, 200)
        pipeline_ms()
        await service_ms()
        for i in range(rounds):
            first, second = ("bare", "framed") if i % 2 == 0 else ("framed", "bare")
            for name in (first, second):
                app = bare if name == "bare" else framed
                out[name].append(await _requests_us(app, FRAME_REQUESTS))
            for name in ("pipeline", "service") if i % 2 == 0 else ("service", "pipeline"):
                out[name].append(pipeline_ms() if name == "pipeline" else await service_ms())
        return out
    finally:
        store.close()


def child(mode: str, rounds: int, queries: int) -> dict[str, list[float]]:
    """One mode's rounds, in this process (a fresh one per mode: recording cannot be undone)."""
    # Every request writes its log line as the servers do (JSON), to nowhere instead of a pipe.
    os.environ["LOG_FORMAT"] = "json"
    setup_logging()
    for handler in logging.getLogger().handlers:
        if isinstance(handler, logging.StreamHandler):
            handler.setStream(open(os.devnull, "w"))  # noqa: SIM115  # the process's lifetime
    setup_tracing("frame-cost")
    if mode == "exported":
        export_spans(BatchSpanProcessor(_Dropped()))
    return asyncio.run(_measure(rounds, queries))


def _paired(with_it: list[float], without: list[float]) -> float:
    """The median of each round's difference: the machine's drift between rounds cancels."""
    return statistics.median(a - b for a, b in zip(with_it, without, strict=True))


def summary(runs: dict[str, dict[str, list[float]]]) -> dict[str, Any]:
    """Per mode: medians, and what the frame and the service add (``ours_ms`` both together)."""
    out: dict[str, Any] = {}
    for mode, figures in runs.items():
        frame_us = _paired(figures["framed"], figures["bare"])
        service_ms = _paired(figures["service"], figures["pipeline"])
        out[mode] = {
            "rounds": figures,
            "bare_route_us": statistics.median(figures["bare"]),
            "frame_us": frame_us,
            "pipeline_ms": statistics.median(figures["pipeline"]),
            "service_over_pipeline_ms": service_ms,
            "ours_ms": frame_us / 1000 + service_ms,
        }
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    parser.add_argument("--rounds", type=int, default=6)
    parser.add_argument("--queries", type=int, default=200, help="dev queries per round")
    parser.add_argument("--out", type=Path, default=REPO / "reports" / "frame_cost.json")
    parser.add_argument("--mode", choices=MODES, help=argparse.SUPPRESS)  # a child's own run
    args = parser.parse_args()
    if args.mode:
        print(json.dumps(child(args.mode, args.rounds, args.queries)))
        return
    runs: dict[str, dict[str, list[float]]] = {}
    env = {**os.environ, **BASE_ENV}
    env.pop("OTEL_EXPORTER_OTLP_ENDPOINT", None)
    env.pop("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", None)
    env.pop("OTEL_TRACES_SAMPLER", None)
    for mode in MODES:
        argv = [sys.executable, "-m", "devtools.bench.frame_cost", "--mode", mode]
        argv += ["--rounds", str(args.rounds), "--queries", str(args.queries)]
        done = subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, check=True)
        runs[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    result = summary(runs)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n")
    for mode, f in result.items():
        print(
            f"{mode}: frame {f['frame_us']:.0f} us per request (route alone "
            f"{f['bare_route_us']:.0f} us); search service {f['service_over_pipeline_ms']:.3f} ms "
            f"over the pipeline's {f['pipeline_ms']:.2f} ms; ours {f['ours_ms']:.3f} ms per query"
        )


if __name__ == "__main__":
    main()
