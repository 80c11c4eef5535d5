"""The load report as Locust's --csv files: their names and headers, counts equal the report's."""

from __future__ import annotations

import csv
from pathlib import Path

import pytest

from services.green_agent.cli import main
from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.load.csv_files import csv_paths, write_csv_files
from services.green_agent.load.report import LoadReport
from tests.support.load_reports import report_of

#: Locust's headers, as its StatsCSV writes them (locust/stats.py, PERCENTILES_TO_REPORT).
LOCUST_PERCENTILES = ["50%", "66%", "75%", "80%", "90%", "95%", "98%", "99%", "99.9%", "99.99%"]
LOCUST_STATS = [
    "Type", "Name", "Request Count", "Failure Count", "Median Response Time",
    "Average Response Time", "Min Response Time", "Max Response Time", "Average Content Size",
    "Requests/s", "Failures/s", *LOCUST_PERCENTILES, "100%",
]  # fmt: skip
LOCUST_HISTORY = [
    "Timestamp", "User Count", "Type", "Name", "Requests/s", "Failures/s", *LOCUST_PERCENTILES,
    "100%", "Total Request Count", "Total Failure Count", "Total Median Response Time",
    "Total Average Response Time", "Total Min Response Time", "Total Max Response Time",
    "Total Average Content Size",
]  # fmt: skip
LOCUST_FAILURES = ["Method", "Name", "Error", "Occurrences"]


def _report(protocol: str = "0.3") -> LoadReport:
    """Five seconds of load: answers of one to five hundredths of a second, two failure reasons."""
    outcomes = [
        QueryOutcome(f"q{i}", 0.010 * (1 + i % 5), ["MED-1"], started_s=0.1 * i) for i in range(45)
    ]
    outcomes += [
        QueryOutcome(f"f{i}", 0.2, None, "timeout" if i % 3 else "contract", "x", started_s=i)
        for i in range(5)
    ]
    return report_of(
        outcomes,
        0,
        5.0,
        agent="http://agent",
        protocol=protocol,
        duration_s=5.0,
        concurrency=4,
        rate=None,
    )


def _read(path: Path) -> tuple[list[str], list[dict[str, str]]]:
    with path.open(newline="", encoding="utf-8") as file:
        rows = list(csv.reader(file))
    return rows[0], [dict(zip(rows[0], row, strict=True)) for row in rows[1:]]


def test_the_files_are_locust_s_with_the_report_s_counts(tmp_path: Path) -> None:
    report = _report()
    paths = write_csv_files(report, tmp_path / "out" / "run")
    assert [p.name for p in paths] == [
        "run_stats.csv",
        "run_stats_history.csv",
        "run_failures.csv",
    ]
    header, (request, aggregated) = _read(paths[0])
    assert header == LOCUST_STATS
    assert (request["Type"], request["Name"]) == ("POST", "message/send")
    assert (aggregated["Type"], aggregated["Name"]) == ("", "Aggregated")
    for row in (request, aggregated):
        assert int(row["Request Count"]) == report.requests == 50
        assert int(row["Failure Count"]) == report.errors == 5
        assert float(row["Requests/s"]) == pytest.approx(report.requests / report.wall_s)
        assert float(row["Failures/s"]) == pytest.approx(report.errors / report.wall_s)
        assert float(row["Min Response Time"]) == pytest.approx(10.0)
        assert float(row["Max Response Time"]) == pytest.approx(50.0)
        assert float(row["Average Response Time"]) == pytest.approx(report.latency.mean_s * 1000)
        assert int(row["Median Response Time"]) == round(report.latency.p50_s * 1000) == 30
        assert int(row["99%"]) == round(report.latency.p99_s * 1000)
        assert int(row["100%"]) == 50

    header, history = _read(paths[1])
    assert header == LOCUST_HISTORY
    assert len(history) == len(report.timeline) and {r["Name"] for r in history} == {"Aggregated"}
    assert [int(r["Timestamp"]) for r in history] == list(range(1, len(history) + 1))
    assert {r["User Count"] for r in history} == {"4"}
    last = history[-1]
    assert int(last["Total Request Count"]) == report.requests
    assert int(last["Total Failure Count"]) == report.errors
    assert int(last["Total Median Response Time"]) == round(report.latency.p50_s * 1000)
    spans = [p.span_s for p in report.timeline]
    ended = [float(r["Requests/s"]) * span for r, span in zip(history, spans, strict=True)]
    assert sum(ended) == pytest.approx(report.requests)

    header, failures = _read(paths[2])
    assert header == LOCUST_FAILURES
    assert {r["Error"]: int(r["Occurrences"]) for r in failures} == report.errors_by_reason
    assert sum(int(r["Occurrences"]) for r in failures) == report.errors
    assert {(r["Method"], r["Name"]) for r in failures} == {("POST", "message/send")}


def test_a_bucket_without_answers_has_no_percentiles(tmp_path: Path) -> None:
    only_failures = report_of(
        [QueryOutcome("f", 0.2, None, "transport", "refused")],
        0,
        1.0,
        agent="http://agent",
        protocol="1.0",
        duration_s=1.0,
        concurrency=None,
        rate=1.0,
    )
    stats, history, _ = write_csv_files(only_failures, tmp_path / "run")
    _, (request, _) = _read(stats)
    assert request["Name"] == "SendMessage" and request["50%"] == "N/A"
    _, (point,) = _read(history)
    assert point["99%"] == "N/A" and point["User Count"] == "0"


def test_load_merge_writes_them(tmp_path: Path) -> None:
    worker = tmp_path / "w0.json"
    worker.write_text(_report().model_dump_json())
    assert main(["load-merge", str(worker), "--csv", str(tmp_path / "merged")]) == 0
    stats, _, _ = csv_paths(tmp_path / "merged")
    _, (_, aggregated) = _read(stats)
    assert int(aggregated["Request Count"]) == 50
