"""Where the workers of a split load run leave their reports, and the one report they make.

In a cluster the workers are pods (an Indexed Job); each posts its report to ``/reports`` when
its run ends (``load --report-to URL``). As soon as the first has reported, the collector merges
the reports it has (:func:`~services.green_agent.load.report.merge_load_reports`), writes the
merge where it was told and serves it at ``GET /report`` and ``GET /report.html``, marked
incomplete (``complete`` false, ``waiting_for`` the workers still to come) until every worker
of the run has reported; then it logs the run's headline. Before any report both answer 404.

A report that is not one, or whose figures are out of bounds or do not hold together (a
histogram bucket past a day, a negative count, failures by reason that do not add up to the
failures: :mod:`~services.green_agent.load.invariants`), is a 422 with what is wrong; so is one
whose merge does not render, since the merge and its page are made before anything is stored.
One from a worker outside the run, of another run, or for a run already complete is a 409; what
is stored stays, and the published merge is never replaced once complete. A worker that reports
again before then (a retried pod) replaces its own.

With a token (``GREEN_LOAD_COLLECTOR_TOKEN[_FILE]``) ``POST /reports`` needs ``Authorization:
Bearer <token>`` (401 otherwise); the reads stay open. Without one it serves on a loopback
address only (:func:`tokens_to_serve`): a collector that anyone who reaches it can hand reports
to stays on this machine.

With ``--out`` each accepted report is also kept beside the merged one (``load.worker-I.json``
for ``load.json``), and a collector that starts where such files are takes back those of its
run: a restarted collector container (its volume kept) still completes the run. Every file is
written whole or not at all (:func:`~services.common.files.atomic_write_text`); a kept file that
does not read all the same (written by an older collector, or damaged) is set aside as
``load.worker-I.json.unreadable`` with a warning, and that worker's report is awaited again. So
is one whose figures do not hold or whose merge does not render: nothing kept stops a start.
"""

from __future__ import annotations

import asyncio
import contextlib
import ipaddress
import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import HTMLResponse, JSONResponse, Response
from starlette.routing import Route

from services.common.files import atomic_write_text, leftover_temporaries
from services.common.frame import ServiceId, service_app
from services.common.limits import ServerLimits
from services.common.validation import describe
from services.green_agent.load.html_page import render_load_html
from services.green_agent.load.report import LoadReport, merge_load_reports

_log = logging.getLogger(__name__)
SERVICE = ServiceId(metric_prefix="load_collector", trace_name="load-collector")
#: A worker's report holds its timeline's histograms: far more than the default body limit of a
#: request (``SERVER_MAX_BODY_BYTES``).
MAX_REPORT_BYTES = 16 * 1024 * 1024
#: What a kept report that does not read is renamed to (``load.worker-1.json.unreadable``).
UNREADABLE_SUFFIX = ".unreadable"
#: The reads a token does not guard: the NetworkPolicy admits only the generators, and a person
#: reads the report through a port-forward.
PUBLIC_PATHS = ("/report", "/report.html")


@dataclass(frozen=True, slots=True)
class Refusal:
    """Why a report was not taken, and the HTTP status that says so."""

    status: int
    reason: str


@dataclass(frozen=True, slots=True)
class Published:
    """A merge as it is served and written: the report, its JSON text and its HTML page."""

    report: LoadReport
    json: str
    page: str


class Collector:
    """The reports of one run's ``workers``, and the merge of those that have come."""

    def __init__(
        self, workers: int, run: str = "", out: Path | None = None, html: Path | None = None
    ) -> None:
        """Expect ``workers`` reports of ``run``; write the merge to ``out`` and ``html`` if given.

        Takes back the reports of ``run`` kept beside ``out`` by an earlier start.
        """
        if workers < 1:
            raise ValueError("a run has at least one worker")
        self.workers = workers
        self.run = run
        self._out, self._html = out, html
        self.reports: dict[int, LoadReport] = {}
        #: The merge of the reports so far, rendered (``complete`` once every worker's is in);
        #: None before.
        self.published: Published | None = None
        self._take_back()

    @property
    def merged(self) -> LoadReport | None:
        """The merge of the reports so far (None before the first)."""
        return self.published.report if self.published is not None else None

    @property
    def complete(self) -> bool:
        """Whether every worker of the run has reported."""
        return len(self.reports) == self.workers

    @property
    def waiting_for(self) -> list[int]:
        """The workers whose reports have not come yet."""
        return [i for i in range(self.workers) if i not in self.reports]

    def _kept(self, worker: int) -> Path | None:
        if self._out is None:
            return None
        return self._out.with_name(f"{self._out.stem}.worker-{worker}.json")

    def _take_back(self) -> None:
        """Take back the kept reports of this run; set aside those that do not read."""
        written = [p for p in (self._out, self._html) if p is not None]
        for target in [*written, *(p for i in range(self.workers) if (p := self._kept(i)))]:
            for leftover in leftover_temporaries(target):
                # A write the container was killed in: the file it meant to replace is whole.
                _log.info("removing %s, left by an interrupted write", leftover)
                with contextlib.suppress(OSError):
                    leftover.unlink()
        for worker in range(self.workers):
            kept = self._kept(worker)
            if kept is None or not kept.is_file():
                continue
            try:
                report = LoadReport.model_validate_json(kept.read_bytes())
            except ValidationError as e:
                self._set_aside(kept, f"not a load report: {describe(e)}")
                continue
            except OSError as e:
                self._set_aside(kept, f"it cannot be read: {e.strerror}")
                continue
            if report.run != self.run:
                # An earlier run's, left in the volume: this run's worker overwrites it.
                _log.info("not taking back %s: a report of run %r", kept, report.run)
                continue
            if report.worker != worker:
                self._set_aside(kept, f"it holds worker {report.worker}'s report")
                continue
            merged = self._merge_with(report)
            if isinstance(merged, Refusal):
                self._set_aside(kept, merged.reason)
                continue
            self._hold(report, merged)
            _log.info("took back worker %d's report from %s", worker, kept)
        if self.reports:
            self._publish()

    def _set_aside(self, kept: Path, why: str) -> None:
        aside = kept.with_name(kept.name + UNREADABLE_SUFFIX)
        try:
            os.replace(kept, aside)
        except OSError as e:
            # Left in place, it is overwritten when the worker's report comes (again).
            _log.warning("kept report %s does not read (%s); cannot set it aside: %s", kept, why, e)
            return
        _log.warning(
            "kept report %s does not read (%s): set aside as %s; worker's report awaited again",
            kept,
            why,
            aside.name,
        )

    def add(self, report: LoadReport, keep: bool = True) -> Refusal | None:
        """Take ``report`` and publish the merge so far; why it is refused, or None.

        ``keep``: first write it beside the merged report (when there is one), for a restart.

        Raises:
            OSError: it could not be kept; nothing changed (the worker's retry may succeed).

        """
        merged = self._merge_with(report)
        if isinstance(merged, Refusal):
            return merged
        if keep and (path := self._kept(report.worker)) is not None:
            atomic_write_text(path, report.model_dump_json())
        self._hold(report, merged)
        self._publish()
        return None

    def _merge_with(self, report: LoadReport) -> Published | Refusal:
        """The merge of the reports held and ``report``, rendered, or why it does not belong.

        A merge that does not render is refused too: a page that fails once would fail on
        every read and at every start after the report was kept.
        """
        if self.complete:
            return Refusal(
                409,
                f"run {self.run!r} is complete: its {self.workers} reports are merged and "
                "published, and no report replaces one now",
            )
        if not 0 <= report.worker < self.workers:
            return Refusal(
                409,
                f"worker {report.worker} is not one of this run's {self.workers} "
                f"(0..{self.workers - 1})",
            )
        if report.run != self.run:
            # A generator of an earlier release revision, still running, or a collector left
            # from one: its report belongs to another run's merge.
            return Refusal(
                409,
                f"the report is of run {report.run!r}; this collector gathers run {self.run!r}",
            )
        reports = {**self.reports, report.worker: report}
        try:
            # In worker order: the merge of the same reports is the same whatever their order.
            merged = merge_load_reports([reports[i] for i in sorted(reports)])
        except ValidationError as e:
            # Reports that hold whose sum does not (rates adding up past a float's range).
            return Refusal(422, f"the merged figures do not hold: {describe(e)}")
        except ValueError as e:
            return Refusal(409, f"not the same run: {e}")
        except ArithmeticError as e:
            # Figures the checks of a report missed and arithmetic does not (a bucket of no width).
            return Refusal(422, f"the report's figures do not merge: {type(e).__name__}: {e}")
        waiting = [i for i in range(self.workers) if i not in reports]
        merged = merged.model_copy(update={"complete": not waiting, "waiting_for": waiting})
        try:
            text = merged.model_dump_json(indent=2) + "\n"
            return Published(merged, text, render_load_html(merged))
        except Exception as e:  # whatever fails, the report is refused: nothing is stored
            # Figures the checks of a report let through: ours to check for, so with the trace.
            _log.warning("worker %d's report does not render", report.worker, exc_info=True)
            return Refusal(422, f"the report's figures do not render: {type(e).__name__}: {e}")

    def _hold(self, report: LoadReport, merged: Published) -> None:
        self.reports = {**self.reports, report.worker: report}
        self.published = merged

    def _publish(self) -> None:
        published = self.published
        assert published is not None
        merged = published.report
        try:
            if self._out is not None:
                atomic_write_text(self._out, published.json)
            if self._html is not None:
                atomic_write_text(self._html, published.page)
        except OSError as e:
            # The report is taken and served all the same: the files are copies of the merge.
            _log.error("could not write the merged report: %s", e)
        if not merged.complete:
            _log.info(
                "load run %r: %d of %d workers reported, waiting for %s",
                self.run,
                len(self.reports),
                self.workers,
                merged.waiting_for,
            )
            return
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
    are the names it answers (``GREEN_ALLOWED_HOSTS``; default: the loopback names).
    """
    lock = asyncio.Lock()

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
    )
