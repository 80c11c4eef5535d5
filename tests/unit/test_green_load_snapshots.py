"""A collector given running generators' snapshots: the newest stands for each, a resent or late
one changes nothing, a retried process starts again, and a worker gone silent is cut short."""

from __future__ import annotations

import time
from pathlib import Path

from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.load.collector import MIN_SILENCE_S, Collector, silence_s
from services.green_agent.load.report import LoadReport
from tests.support.load_reports import report_of


def _snapshot(
    worker: int, requests: int, sequence: int, session: str = "a", partial: bool = True
) -> LoadReport:
    outcomes = [
        QueryOutcome(f"q{worker}-{i}", 0.01, ["MED-1"], started_s=i / 10) for i in range(requests)
    ]
    report = report_of(outcomes, wall_s=requests / 10 + 0.1, duration_s=10.0, worker=worker)
    update = {"partial": partial, "sequence": sequence, "session": session, "report_every_s": 1.0}
    return report.model_copy(update=update)


def test_the_newest_snapshot_stands_for_its_worker() -> None:
    collector = Collector(2)
    assert collector.add(_snapshot(0, 5, sequence=0)) is None
    assert collector.add(_snapshot(0, 9, sequence=1)) is None
    merged = collector.merged
    assert merged is not None and merged.requests == 9 and not merged.complete
    assert merged.waiting_for == [0, 1] and merged.workers[0].status == "running"
    # Sent again, or arriving after a later one: nothing changes.
    assert collector.add(_snapshot(0, 5, sequence=0)) is None
    assert collector.add(_snapshot(0, 9, sequence=1)) is None
    assert collector.merged is not None and collector.merged.requests == 9


def test_the_final_report_replaces_the_snapshots_and_a_late_snapshot_does_not_undo_it() -> None:
    collector = Collector(1)
    collector.add(_snapshot(0, 5, sequence=0))
    collector.add(_snapshot(0, 20, sequence=2, partial=False))
    assert collector.complete and collector.merged is not None
    assert collector.merged.requests == 20 and collector.merged.workers[0].status == "finished"
    # A snapshot delivered late, after the final report: refused as the run is complete.
    refusal = collector.add(_snapshot(0, 9, sequence=1))
    assert refusal is not None and refusal.status == 409
    assert collector.merged.requests == 20


def test_a_late_snapshot_after_the_final_report_changes_nothing_while_others_run() -> None:
    collector = Collector(2)
    collector.add(_snapshot(0, 20, sequence=2, partial=False))
    assert collector.add(_snapshot(0, 9, sequence=1)) is None
    assert collector.merged is not None and collector.merged.requests == 20
    assert collector.waiting_for == [1]


def test_a_retried_process_starts_its_worker_again() -> None:
    collector = Collector(1)
    collector.add(_snapshot(0, 30, sequence=5, session="first"))
    # The pod was retried: its new process numbers from 0, and its figures replace the old.
    collector.add(_snapshot(0, 4, sequence=0, session="second"))
    assert collector.merged is not None and collector.merged.requests == 4


def test_a_silent_worker_is_cut_short_and_the_run_completes_without_it() -> None:
    collector = Collector(2)
    collector.add(_snapshot(0, 12, sequence=3))
    collector.add(_snapshot(1, 40, sequence=4, partial=False))
    later = time.monotonic() + silence_s(_snapshot(0, 1, 0)) + 1
    assert collector.check_silence(time.monotonic()) == []  # not silent yet
    assert collector.check_silence(later) == [0]
    merged = collector.merged
    assert merged is not None and merged.complete and merged.cut_short == [0]
    # Its share up to its last snapshot stays in the run's figures.
    assert merged.requests == 52 and merged.workers[0].status == "cut short"
    assert collector.check_silence(later + 60) == []  # cut once


def test_once_the_run_is_complete_a_worker_cut_short_is_not_taken_back() -> None:
    collector = Collector(2)
    collector.add(_snapshot(0, 12, sequence=3))
    collector.add(_snapshot(1, 10, sequence=0))
    collector.check_silence(time.monotonic() + 60)
    assert collector.cut_short == {0, 1} and collector.complete
    # Complete: the merge is published as the run's, and nothing replaces it now.
    refusal = collector.add(_snapshot(0, 15, sequence=4))
    assert refusal is not None and refusal.status == 409


def test_a_worker_is_taken_back_while_the_run_is_still_open() -> None:
    collector = Collector(3)
    collector.add(_snapshot(0, 12, sequence=3))
    collector.check_silence(time.monotonic() + 60)
    assert collector.cut_short == {0} and collector.waiting_for == [1, 2]
    collector.add(_snapshot(0, 15, sequence=4))
    assert collector.cut_short == set() and collector.waiting_for == [0, 1, 2]
    assert collector.merged is not None and collector.merged.cut_short == []


def test_silence_is_a_few_intervals_and_never_shorter_than_the_floor() -> None:
    assert silence_s(_snapshot(0, 1, 0)) == max(3.0, MIN_SILENCE_S)
    fast = _snapshot(0, 1, 0).model_copy(update={"report_every_s": 0.1})
    assert silence_s(fast) == MIN_SILENCE_S


def test_a_restarted_collector_takes_back_the_snapshots_it_kept(tmp_path: Path) -> None:
    out = tmp_path / "load.json"
    first = Collector(2, out=out)
    first.add(_snapshot(0, 12, sequence=3))
    again = Collector(2, out=out)
    assert again.merged is not None and again.merged.requests == 12
    assert again.waiting_for == [0, 1]  # still running, as far as it knows
