"""The load report as the CSV files Locust's ``--csv PREFIX`` writes: stats, history, failures.

Three files, with Locust's names and columns, so what reads Locust's reads these:

- ``PREFIX_stats.csv``: one row for the requests (Type ``POST``, Name the A2A method:
  ``SendMessage`` over 1.0, ``message/send`` over 0.3) and Locust's ``Aggregated`` row (Type
  empty). Request Count is every request sent, Failure Count the failed ones, Requests/s and
  Failures/s those over the run's wall time.
- ``PREFIX_stats_history.csv``: one ``Aggregated`` row per bucket of the report's timeline (one
  a second up to two minutes of load), its rates those of the requests that ended in it; the
  Total columns count from the start of the run to the end of the bucket.
- ``PREFIX_failures.csv``: one row per failure reason and its occurrences.

As Locust's, times are milliseconds, the median and the percentile columns whole ones (``N/A``
without an answer). Where they differ: the response times are those of the answers (the report
keeps the failures' apart; Locust mixes them in), read from the report's histograms (at most 1%
high); a history Timestamp is whole seconds since the start of the run (the end of its bucket;
Locust's is the Unix time it wrote the row) and its percentiles are those of the bucket (Locust's
--csv-full-history window, not its default of the run so far); User Count is the closed loop's
concurrency (0 for an open loop, which has no users); Average Content Size is 0 (not measured).
Locust's fourth file, of exceptions, has no counterpart: an answer that breaks the contract is a
failure with its reason.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable, Sequence
from pathlib import Path

from services.common.files import atomic_write_text
from services.green_agent.load.histogram import LatencyHistogram
from services.green_agent.load.report import LoadReport

#: Locust's percentiles of its CSV files (``PERCENTILES_TO_REPORT``), as fractions.
PERCENTILES = (0.50, 0.66, 0.75, 0.80, 0.90, 0.95, 0.98, 0.99, 0.999, 0.9999, 1.0)
#: Their column names: ``50%`` ... ``99.9%``, ``99.99%``, ``100%``.
PERCENTILE_COLUMNS = tuple(f"{round(p * 100, 6):g}%" for p in PERCENTILES)
STATS_COLUMNS = (
    "Type",
    "Name",
    "Request Count",
    "Failure Count",
    "Median Response Time",
    "Average Response Time",
    "Min Response Time",
    "Max Response Time",
    "Average Content Size",
    "Requests/s",
    "Failures/s",
    *PERCENTILE_COLUMNS,
)
HISTORY_COLUMNS = (
    "Timestamp",
    "User Count",
    "Type",
    "Name",
    "Requests/s",
    "Failures/s",
    *PERCENTILE_COLUMNS,
    "Total Request Count",
    "Total Failure Count",
    "Total Median Response Time",
    "Total Average Response Time",
    "Total Min Response Time",
    "Total Max Response Time",
    "Total Average Content Size",
)
FAILURES_COLUMNS = ("Method", "Name", "Error", "Occurrences")
#: The request's Type column: A2A's JSON-RPC requests are HTTP POSTs.
METHOD = "POST"
#: The request's Name column: the A2A method of each protocol version.
A2A_METHODS = {"1.0": "SendMessage", "0.3": "message/send"}
AGGREGATED = "Aggregated"

Cell = str | int | float


def csv_paths(prefix: Path) -> tuple[Path, Path, Path]:
    """The stats, history and failures files of ``prefix``, named as Locust names them."""

    def named(kind: str) -> Path:
        return prefix.with_name(f"{prefix.name}_{kind}.csv")

    return named("stats"), named("stats_history"), named("failures")


def _ms(seconds: float | None) -> float:
    return round((seconds or 0.0) * 1000, 3)


def _percentiles(latencies: LatencyHistogram) -> list[Cell]:
    if not latencies.count:
        return ["N/A"] * len(PERCENTILES)
    return [round(latencies.quantile(p) * 1000) for p in PERCENTILES]


def _times(latencies: LatencyHistogram) -> list[Cell]:
    """Median, average, min and max, in milliseconds, as Locust's columns have them."""
    return [
        round(latencies.quantile(0.5) * 1000),
        _ms(latencies.mean_s),
        _ms(latencies.min_s),
        _ms(latencies.max_s),
    ]


def stats_rows(report: LoadReport) -> list[list[Cell]]:
    """The rows of ``_stats.csv``: the requests, then the ``Aggregated`` row (the same figures)."""
    name = A2A_METHODS.get(report.protocol, f"A2A {report.protocol}")
    figures = [
        report.requests,
        report.errors,
        *_times(report.latencies),
        0,
        round(report.requests / report.wall_s, 6) if report.wall_s > 0 else 0.0,
        round(report.errors / report.wall_s, 6) if report.wall_s > 0 else 0.0,
        *_percentiles(report.latencies),
    ]
    return [[METHOD, name, *figures], ["", AGGREGATED, *figures]]


def history_rows(report: LoadReport) -> list[list[Cell]]:
    """The rows of ``_stats_history.csv``: one per timeline bucket, totals up to its end."""
    users = report.concurrency or 0
    rows: list[list[Cell]] = []
    total = LatencyHistogram()
    requests = failures = 0
    for point in report.timeline:
        total = total.merged(point.latencies)
        requests += point.answered + point.failed
        failures += point.failed
        rows.append(
            [
                round(point.start_s + point.span_s),
                users,
                "",
                AGGREGATED,
                f"{(point.answered + point.failed) / point.span_s:.6f}",
                f"{point.failed / point.span_s:.6f}",
                *_percentiles(point.latencies),
                requests,
                failures,
                *_times(total),
                0,
            ]
        )
    return rows


def failure_rows(report: LoadReport) -> list[list[Cell]]:
    """The rows of ``_failures.csv``: each failure reason and how often it occurred."""
    name = A2A_METHODS.get(report.protocol, f"A2A {report.protocol}")
    return [[METHOD, name, reason, n] for reason, n in sorted(report.errors_by_reason.items())]


def _write(path: Path, header: Sequence[str], rows: Iterable[Sequence[Cell]]) -> None:
    text = io.StringIO(newline="")
    writer = csv.writer(text)
    writer.writerow(header)
    writer.writerows(rows)
    atomic_write_text(path, text.getvalue())


def write_csv_files(report: LoadReport, prefix: Path) -> list[Path]:
    """Write the three files of ``prefix`` (its folder created); their paths."""
    prefix.parent.mkdir(parents=True, exist_ok=True)
    stats, history, failures = csv_paths(prefix)
    _write(stats, STATS_COLUMNS, stats_rows(report))
    _write(history, HISTORY_COLUMNS, history_rows(report))
    _write(failures, FAILURES_COLUMNS, failure_rows(report))
    return [stats, history, failures]
