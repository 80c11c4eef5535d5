"""Where the workers of a split load run leave their reports, and the one report they make.

In a cluster the workers are pods (an Indexed Job); each posts its report to ``/reports`` when
its run ends (``load --report-to URL``). As soon as the first has reported, the collector merges
the reports it has (:func:`~services.green_agent.load.recorder.merge_load_reports`), writes the
merge where it was told and serves it at ``GET /report`` and ``GET /report.html``, marked
incomplete (``complete`` false, ``waiting_for`` the workers still to come) until every worker
of the run has reported; then it logs the run's headline. Before any report both answer 404.

Generators also hand in snapshots while they run (``load --report-every``: a report marked
``partial``, numbered by ``sequence`` within its process's ``session``): the merge and the page
are live, each worker's newest snapshot standing for it until its final report comes. A
snapshot older than the one held, or one after the worker's final report, changes nothing (a
resend, or a late delivery); a report of another session (a retried pod) replaces the held one.
A worker whose last report is a snapshot and who has been silent for :data:`SILENT_INTERVALS`
of its intervals (at least :data:`MIN_SILENCE_S`) is cut short: the run's figures keep its
share up to that snapshot, the report lists it in ``cut_short``, and the run is complete
without it, so its verdict still comes. A report from it after that takes it back.

A report that is not one, or whose figures are out of bounds or do not hold together (a
histogram bucket past a day, a negative count, failures by reason that do not add up to the
failures: :mod:`~services.green_agent.load.invariants`), is a 422 with what is wrong; so is one
whose merge does not render, since the merge and its page are made before anything is stored.
One from a worker outside the run, of another run, or for a run already complete is a 409; what
is stored stays, and the published merge is never replaced once complete. A worker that reports
again before then (a retried pod) replaces its own.

Its HTTP side (routes, tokens, the check for silent workers every second) is
:mod:`services.green_agent.load.collector_app`.

With ``--out`` each accepted report is also kept beside the merged one (``load.worker-I.json``
for ``load.json``), and a collector that starts where such files are takes back those of its
run: a restarted collector container (its volume kept) still completes the run. Every file is
written whole or not at all (:func:`~services.common.files.atomic_write_text`); a kept file that
does not read all the same (written by an older collector, or damaged) is set aside as
``load.worker-I.json.unreadable`` with a warning, and that worker's report is awaited again. So
is one whose figures do not hold or whose merge does not render: nothing kept stops a start.
"""

from __future__ import annotations

import contextlib
import logging
import os
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pydantic import ValidationError

from services.common.files import atomic_write_text, leftover_temporaries
from services.common.validation import describe
from services.green_agent.load.html_page import render_load_html
from services.green_agent.load.recorder import merge_load_reports
from services.green_agent.load.report import LoadReport
from services.green_agent.load.shape import ShapeError

_log = logging.getLogger(__name__)
#: What a kept report that does not read is renamed to (``load.worker-1.json.unreadable``).
UNREADABLE_SUFFIX = ".unreadable"
#: Intervals a running worker may stay silent before it is cut short: one late snapshot is a
#: slow network or a pause, three are a generator that is gone.
SILENT_INTERVALS = 3
#: Silence never shorter than this: three short intervals are a pause, not a generator gone.
MIN_SILENCE_S = 2.0


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
        #: When each worker's report came (``time.monotonic()``), and the workers cut short.
        self._arrived: dict[int, float] = {}
        self.cut_short: set[int] = set()
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
        """Whether every worker of the run has reported its end, or was cut short."""
        return not self.waiting_for

    @property
    def waiting_for(self) -> list[int]:
        """The workers whose final reports have not come yet (and who were not cut short)."""
        return _waiting(self.workers, self.reports, self.cut_short)

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
        held = self.reports.get(report.worker)
        if held is not None and not self.complete and _outdated(report, held):
            return None  # a resent or late snapshot: what is held already has its figures
        merged = self._merge_with(report)
        if isinstance(merged, Refusal):
            return merged
        if keep and (path := self._kept(report.worker)) is not None:
            atomic_write_text(path, report.model_dump_json())
        self._hold(report, merged)
        self._publish()
        return None

    def check_silence(self, now: float | None = None) -> list[int]:
        """Cut short the running workers silent too long; the workers it cut short now."""
        now = time.monotonic() if now is None else now
        silent = [
            worker
            for worker, report in self.reports.items()
            if report.partial
            and worker not in self.cut_short
            and now - self._arrived[worker] > silence_s(report)
        ]
        if not silent or self.published is None or self.published.report.complete:
            return []
        cut = self.cut_short | set(silent)
        merged = self._merge(self.reports, cut)
        if isinstance(merged, Refusal):  # pragma: no cover - the same reports merged before
            return []
        for worker in silent:
            _log.warning(
                "load run %r: worker %d silent for %.1f s: cut short at its last snapshot",
                self.run,
                worker,
                now - self._arrived[worker],
            )
        self.cut_short = cut
        self.published = merged
        self._publish()
        return silent

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
        return self._merge(
            {**self.reports, report.worker: report}, self.cut_short - {report.worker}
        )

    def _merge(self, reports: dict[int, LoadReport], cut_short: set[int]) -> Published | Refusal:
        """The merge of ``reports`` with ``cut_short`` marked, rendered, or why it cannot be."""
        try:
            # In worker order: the merge of the same reports is the same whatever their order.
            merged = merge_load_reports([reports[i] for i in sorted(reports)])
        except ValidationError as e:
            # Reports that hold whose sum does not (rates adding up past a float's range).
            return Refusal(422, f"the merged figures do not hold: {describe(e)}")
        except ShapeError as e:
            # Their paces add up past a float's range: the sum of the stages is no shape.
            return Refusal(422, f"the merged figures do not hold: {e}")
        except ValueError as e:
            return Refusal(409, f"not the same run: {e}")
        except ArithmeticError as e:
            # Figures the checks of a report missed and arithmetic does not (a bucket of no width).
            return Refusal(422, f"the report's figures do not merge: {type(e).__name__}: {e}")
        waiting = _waiting(self.workers, reports, cut_short)
        workers = [
            w.model_copy(update={"status": "cut short"}) if w.worker in cut_short else w
            for w in merged.workers
        ]
        merged = merged.model_copy(
            update={
                "complete": not waiting,
                "waiting_for": waiting,
                "cut_short": sorted(cut_short),
                "workers": workers,
            }
        )
        try:
            text = merged.model_dump_json(indent=2) + "\n"
            return Published(merged, text, render_load_html(merged))
        except Exception as e:  # whatever fails, the report is refused: nothing is stored
            # Figures the checks of a report let through: ours to check for, so with the trace.
            _log.warning("the merge of workers %s does not render", sorted(reports), exc_info=True)
            return Refusal(422, f"the report's figures do not render: {type(e).__name__}: {e}")

    def _hold(self, report: LoadReport, merged: Published) -> None:
        self.reports = {**self.reports, report.worker: report}
        self._arrived[report.worker] = time.monotonic()
        self.cut_short = self.cut_short - {report.worker}
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
            _log.debug(
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


def silence_s(report: LoadReport) -> float:
    """How long the worker of ``report``, a snapshot, may be silent before it is cut short."""
    return max(SILENT_INTERVALS * report.report_every_s, MIN_SILENCE_S)


def _waiting(workers: int, reports: Mapping[int, LoadReport], cut_short: set[int]) -> list[int]:
    return [
        i for i in range(workers) if i not in reports or (reports[i].partial and i not in cut_short)
    ]


def _outdated(report: LoadReport, held: LoadReport) -> bool:
    """Whether ``report`` brings nothing ``held`` lacks.

    That is an older snapshot of the same process, or a snapshot after its final report.
    """
    if report.session != held.session:
        return False  # another process of the worker (a retried pod): it starts again
    if not held.partial:
        return report.partial
    return report.partial and report.sequence < held.sequence
