"""chart-run's checks of the in-cluster load test: each fails on the broken figures it guards."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from harness.chart_run.load_test import load_test_problems, report_figures
from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.load.report import build_load_report, merge_load_reports


def _figures() -> dict[str, Any]:
    """A passing load test: three workers' real reports, merged as the collector merges them."""
    reports = [
        build_load_report(
            [QueryOutcome(f"q{w}-{i}", 0.01 * (i + 1), ["MED-1"]) for i in range(10 + w)],
            0,
            5.0,
            agent="http://purple:9009/",
            protocol="0.3",
            duration_s=5.0,
            concurrency=None,
            rate=3.0,
            worker=w,
            split=True,
            cpu_s=0.1,
            run="release-r1",
        )
        for w in range(3)
    ]
    merged = merge_load_reports(reports)
    return {
        "job": "gen-r1",
        "workers": 3,
        "complete": True,
        "failure": None,
        "failed_pods": {},
        "report": report_figures(merged),
    }


def test_a_consistent_run_passes() -> None:
    figures = _figures()
    assert load_test_problems(figures) == []
    assert figures["report"]["requests"] == 33 == figures["report"]["answers_in_histogram"]


def _break(path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    figures = copy.deepcopy(_figures())
    target: Any = figures
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return figures


@pytest.mark.parametrize(
    ("figures", "message"),
    [
        (_break(("complete",), False), "Job gen-r1"),
        (_break(("failed_pods",), {"gen-r1-0-abc": 1}), "failed {'gen-r1-0-abc': 1}"),
        (_break(("report",), None), "the collector has no report"),
        (_break(("report", "workers", 2, "worker"), 5), "workers [0, 1, 5]"),
        (_break(("report", "requests"), 34), "requests 34 is not the workers' sum"),
        (_break(("report", "ok"), 32), "ok 32 is not the workers' sum"),
        (_break(("report", "answers_in_histogram"), 30), "histogram counts 30 answers of 33"),
        (_break(("report", "failures_in_histogram"), 1), "failures' histogram counts 1 of 0"),
        (_break(("report", "workers", 0, "errors"), 1), "errors 0 is not the workers' sum"),
        (_break(("report", "complete"), False), "the collector still waits for []"),
    ],
)
def test_each_check_fails_on_what_it_guards(figures: dict[str, Any], message: str) -> None:
    problems = load_test_problems(figures)
    assert any(message in p for p in problems), problems


def test_failed_requests_fail_the_run() -> None:
    figures = _break(("report", "errors"), 2)
    figures["report"]["workers"][0]["errors"] = 2
    figures["report"]["failures_in_histogram"] = 2
    (problem,) = load_test_problems(figures)
    assert "2 of 33 failed" in problem
