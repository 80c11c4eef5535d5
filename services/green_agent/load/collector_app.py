"""The load collector's HTTP side: ``POST /reports``, ``GET /report`` and ``GET /report.html``.

The collector itself (:class:`~services.green_agent.load.collector.Collector`) takes and merges
the reports; this module serves it in the service frame, one report merged at a time, and
checks every :data:`SILENCE_CHECK_S` for running workers gone silent (they are cut short). Its
``/metrics`` carries the run's client-side figures beside the frame's own
(:mod:`services.green_agent.load.metrics`).

With a token (``GREEN_LOAD_COLLECTOR_TOKEN[_FILE]``) ``POST /reports`` needs ``Authorization:
Bearer <token>`` (401 otherwise); the reads stay open, ``/metrics`` too unless a scrape token is
set (``GREEN_METRICS_TOKEN[_FILE]``): it says what ``/report`` says. Without one it serves on a
loopback address only (:func:`tokens_to_serve`): a collector that anyone who reaches it can hand
reports to stays on this machine.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
from collections.abc import AsyncIterator, Mapping

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from services.common.frame import ServiceId, service_app
from services.common.limits import ServerLimits
from services.common.paths import METRICS
from services.common.validation import describe
from services.green_agent.load.collector import Collector
from services.green_agent.load.metrics import serve_load_metrics
from services.green_agent.load.report import LoadReport

SERVICE = ServiceId(metric_prefix="load_collector", trace_name="load-collector")
#: A worker's report holds its timeline's histograms: far more than the default body limit of a
#: request (``SERVER_MAX_BODY_BYTES``).
MAX_REPORT_BYTES = 16 * 1024 * 1024
#: The reads a token does not guard: the NetworkPolicy admits only the generators (and, on the
#: metrics port, Prometheus), and a person reads the report through a port-forward. ``/metrics``
#: holds the same figures: open as they are, unless a scrape token is set.
PUBLIC_PATHS = ("/report", "/report.html", METRICS)
#: Seconds between two checks for silent workers.
SILENCE_CHECK_S = 1.0


def loopback(host: str) -> bool:
    """Whether serving on ``host`` reaches this machine only (``localhost``, 127.0.0.0/8, ::1)."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:  # a name: what it resolves to is not this process's to know
        return False


def tokens_to_serve(host: str, tokens: Mapping[str, str]) -> Mapping[str, str]:
    """``tokens``, once they allow serving on ``host``: without a token, loopback only.

    Without a token whoever reaches the collector hands in the run's reports: on loopback that is
    this machine alone, on any other address every host or pod that reaches it.

    Raises:
        ValueError: ``host`` is not a loopback address and there is no token; says what to set.

    """
    if tokens or loopback(host):
        return tokens
    raise ValueError(
        f"load-collect would serve POST /reports on {host}, beyond this machine, without a "
        "token: whoever reaches it could hand in the run's reports. Set "
        "GREEN_LOAD_COLLECTOR_TOKEN or GREEN_LOAD_COLLECTOR_TOKEN_FILE (16+ characters; the "
        "workers send it too), or serve on a loopback address (--host 127.0.0.1)"
    )


def create_collector_app(
    collector: Collector,
    tokens: Mapping[str, str] | None = None,
    metrics_tokens: Mapping[str, str] | None = None,
    allowed_hosts: list[str] | None = None,
) -> Starlette:
    """The collector's routes in the service frame; ``tokens`` guard ``POST /reports``.

    ``metrics_tokens`` (the scrape token) guard ``/metrics``, as on every server; ``allowed_hosts``
    are the names it answers (``GREEN_ALLOWED_HOSTS``; default: the loopback names). The process's
    ``/metrics`` serves this collector's figures from now on.
    """
    serve_load_metrics(collector)
    lock = asyncio.Lock()

    async def cut_silent() -> None:
        async with lock:
            if any(r.partial for r in collector.reports.values()):
                await asyncio.to_thread(collector.check_silence)

    @contextlib.asynccontextmanager
    async def watch_silence(_: Starlette) -> AsyncIterator[None]:
        async def every_second() -> None:
            while True:
                await asyncio.sleep(SILENCE_CHECK_S)
                await cut_silent()

        watcher = asyncio.create_task(every_second())
        try:
            yield
        finally:
            watcher.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await watcher

    async def post_report(request: Request) -> Response:
        try:
            report = LoadReport.model_validate_json(await request.body())
        except ValidationError as e:
            return JSONResponse({"error": f"not a load report: {describe(e)}"}, status_code=422)
        async with lock:  # one merge at a time: the last report completes the run once
            refusal = await asyncio.to_thread(collector.add, report)
        if refusal is not None:
            return JSONResponse({"error": refusal.reason}, status_code=refusal.status)
        body = {"received": sorted(collector.reports), "workers": collector.workers}
        return JSONResponse({**body, "complete": collector.complete})

    async def get_report(_: Request) -> Response:
        if collector.published is None:
            body = {"error": "no worker has reported yet", "waiting_for": collector.waiting_for}
            return JSONResponse(body, status_code=404)
        return Response(collector.published.json, media_type="application/json")

    async def get_html(_: Request) -> Response:
        if collector.published is None:
            return JSONResponse({"error": "no worker has reported yet"}, status_code=404)
        return HTMLResponse(collector.published.page)

    routes = [
        Route("/reports", post_report, methods=["POST"]),
        Route("/report", get_report, methods=["GET"]),
        Route("/report.html", get_html, methods=["GET"]),
    ]
    return service_app(
        SERVICE,
        routes,
        limits=ServerLimits(max_body_bytes=MAX_REPORT_BYTES),
        tokens=tokens,
        public_get_paths=PUBLIC_PATHS,
        metrics_tokens=metrics_tokens,
        # A report is JSON: any other type is refused before it is read, as the other servers'
        # JSON endpoints refuse it (a web page can post text/plain anywhere unasked).
        json_paths=["/reports"],
        allowed_hosts=allowed_hosts,
        lifespan=watch_silence,
    )
