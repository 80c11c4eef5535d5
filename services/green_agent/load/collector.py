"""Where the workers of a split load run leave their reports, and the one report they make.

In a cluster the workers are pods (an Indexed Job); each posts its report to ``/reports`` when
its run ends (``load --report-to URL``). Once every worker of the run has reported, the
collector merges them (:func:`~services.green_agent.load.report.merge_load_reports`), writes the
merged JSON and HTML where it was told, logs the run's headline, and serves the report at
``GET /report`` and ``GET /report.html`` (404 until it is complete). A report that is not one,
comes from a worker outside the run or from another run is refused with what is wrong, and what
is already stored stays; a worker that reports again (a retried pod) replaces its own.

With ``--out`` each accepted report is also written beside the merged one (``load.worker-I.json``
for ``load.json``), and a collector that starts where such files are takes back those of its
run: a restarted collector container (its volume kept) still completes the run.
"""

from __future__ import annotations

import asyncio
import logging
from pathlib import Path

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from services.common.frame import ServiceId, service_app
from services.common.limits import ServerLimits
from services.green_agent.load.html_page import render_load_html, write_load_html
from services.green_agent.load.report import LoadReport, merge_load_reports

_log = logging.getLogger(__name__)
SERVICE = ServiceId(metric_prefix="load_collector", trace_name="load-collector")
#: A worker's report holds its timeline's histograms: far more than the default body limit of a
#: request (``SERVER_MAX_BODY_BYTES``).
MAX_REPORT_BYTES = 16 * 1024 * 1024


class Collector:
    """The reports of one run's ``workers``, and their merge once all have come."""

    def __init__(
        self, workers: int, run: str = "", out: Path | None = None, html: Path | None = None
    ) -> None:
        """Expect ``workers`` reports of ``run``; write the merge to ``out`` and ``html`` if given."""
        if workers < 1:
            raise ValueError("a run has at least one worker")
        self.workers = workers
        self.run = run
        self._out, self._html = out, html
        self.reports: dict[int, LoadReport] = {}
        self.merged: LoadReport | None = None
        for kept in self._kept_files():
            report = LoadReport.model_validate_json(kept.read_text(encoding="utf-8"))
            if report.run == run and self.add(report, keep=False) is None:
                _log.info("took back worker %d's report from %s", report.worker, kept)

    def _kept(self, worker: int) -> Path | None:
        if self._out is None:
            return None
        return self._out.with_name(f"{self._out.stem}.worker-{worker}.json")

    def _kept_files(self) -> list[Path]:
        return [p for i in range(self.workers) if (p := self._kept(i)) and p.is_file()]

    def add(self, report: LoadReport, keep: bool = True) -> str | None:
        """Keep ``report``; the reason it is refused, or None. Merges when the run is complete.

        ``keep``: also write it beside the merged report (when there is one), for a restart.
        """
        if not 0 <= report.worker < self.workers:
            return f"worker {report.worker} is not one of this run's {self.workers} (0..{self.workers - 1})"
        if report.run != self.run:
            # A generator of an earlier release revision, still running, or a collector left
            # from one: its report belongs to another run's merge.
            return f"the report is of run {report.run!r}; this collector gathers run {self.run!r}"
        others = [r for i, r in self.reports.items() if i != report.worker]
        try:
            merged = merge_load_reports([*others, report])
        except ValueError as e:
            return f"not the same run: {e}"
        self.reports[report.worker] = report
        if keep and (path := self._kept(report.worker)) is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(report.model_dump_json(), encoding="utf-8")
        if len(self.reports) == self.workers:
            self.merged = merged
            self._write(merged)
        return None

    def _write(self, merged: LoadReport) -> None:
        if self._out is not None:
            self._out.parent.mkdir(parents=True, exist_ok=True)
            self._out.write_text(merged.model_dump_json(indent=2) + "\n", encoding="utf-8")
        if self._html is not None:
            write_load_html(merged, self._html)
        _log.info(
            "load run %r complete: %d workers, %d requests, %d answered, p99 %.1f ms%s",
            self.run,
            self.workers,
            merged.requests,
            merged.ok,
            merged.latency.p99_s * 1000,
            "; generator-bound: " + "; ".join(merged.generator_bound)
            if merged.generator_bound
            else "",
        )


def create_collector_app(collector: Collector) -> Starlette:
    """The collector's routes in the service frame."""
    lock = asyncio.Lock()

    async def post_report(request: Request) -> Response:
        try:
            report = LoadReport.model_validate_json(await request.body())
        except ValidationError as e:
            return JSONResponse({"error": f"not a load report: {e.error_count()} problems"}, 400)
        async with lock:  # one merge at a time: the last report completes the run once
            refused = await asyncio.to_thread(collector.add, report)
        if refused is not None:
            return JSONResponse({"error": refused}, status_code=409)
        body = {"received": sorted(collector.reports), "workers": collector.workers}
        return JSONResponse({**body, "complete": collector.merged is not None})

    async def get_report(_: Request) -> Response:
        if collector.merged is None:
            waiting = sorted(set(range(collector.workers)) - set(collector.reports))
            return JSONResponse({"error": "the run is not complete", "waiting_for": waiting}, 404)
        return Response(collector.merged.model_dump_json(), media_type="application/json")

    async def get_html(_: Request) -> Response:
        if collector.merged is None:
            return JSONResponse({"error": "the run is not complete"}, status_code=404)
        return HTMLResponse(render_load_html(collector.merged))

    routes = [
        Route("/reports", post_report, methods=["POST"]),
        Route("/report", get_report, methods=["GET"]),
        Route("/report.html", get_html, methods=["GET"]),
    ]
    return service_app(SERVICE, routes, limits=ServerLimits(max_body_bytes=MAX_REPORT_BYTES))
