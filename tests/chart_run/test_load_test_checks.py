"""chart-run's checks of the in-cluster load test and of its run with a budget set to fail: each
fails on the broken figures it guards."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from harness.chart_run.load_test import BREACH_BUDGET, load_test_problems, report_figures
from harness.chart_run.summary import _load_test_lines
from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.load.outputs import with_thresholds
from services.green_agent.load.recorder import merge_load_reports
from services.green_agent.load.thresholds import EXIT_BREACHED, parse_budgets
from tests.support.load_reports import report_of

BUDGETS = ["p99<10s", "errors < 1%"]


def _figures() -> dict[str, Any]:
    """A passing load test: three workers' real reports, merged as the collector merges them."""
    reports = [
        with_thresholds(
            report_of(
                [QueryOutcome(f"q{w}-{i}", 0.01 * (i + 1), ["MED-1"]) for i in range(10 + w)],
                0,
                5.0,
                agent="http://purple:9009/",
                protocol="0.3",
                duration_s=5.0,
                concurrency=None,
                rate=3.0,
                worker=w,
                cpu_s=0.1,
                run="release-r1",
            ),
            parse_budgets(BUDGETS),
            judged=False,
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
        "budgets": BUDGETS,
        "report": report_figures(merged),
        "breach": {
            "budget": BREACH_BUDGET,
            "seconds": 9.0,
            "complete": False,
            "failure": "BackoffLimitExceeded: 1 failed pods",
            "failed_pods": {"gen-r1-0-abc": EXIT_BREACHED},
            "named_in": ["gen-r1-0-abc", "gen-r1-1-def"],
            "collector_restart": [{"exit_code": 0, "killed": False}],
            "collector": None,
            "thresholds": [{"budget": BREACH_BUDGET, "measured": 0.01, "passed": False}],
            "logs": {},
        },
    }


def test_a_consistent_run_passes() -> None:
    figures = _figures()
    assert load_test_problems(figures) == []
    assert figures["report"]["requests"] == 33 == figures["report"]["answers_in_histogram"]
    assert [t["passed"] for t in figures["report"]["thresholds"]] == [True, True]


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
        (_break(("report", "thresholds", 1, "passed"), False), "budget errors<1% not met"),
        (_break(("report", "thresholds"), []), "the report judged the budgets []"),
        (_break(("budgets",), ["p99<1s"]), "the Job was given ['p99<1s']"),
        (_break(("breach", "complete"), True), "the Job completed; a breached budget must fail"),
        (_break(("breach", "failed_pods"), {"gen-r1-0-abc": 2}), "exited [2], not 3"),
        (_break(("breach", "failed_pods"), {}), "exited [], not 3"),
        (_break(("breach", "named_in"), []), "logs of ['gen-r1-0-abc'] do not name"),
        (_break(("breach", "thresholds", 0, "passed"), True), "does not mark it breached"),
        (_break(("breach", "thresholds"), None), "does not mark it breached: None"),
        (_break(("breach", "collector_restart", 0, "killed"), True), "replaced collector stopped"),
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


def test_the_page_states_the_budgets_and_the_failed_run() -> None:
    budgets_line, breach_line = _load_test_lines(_figures())
    assert "budgets: p99<10s met, errors<1% met" in budgets_line
    assert f"upgraded with the budget {BREACH_BUDGET}" in breach_line
    assert "the Job failed: BackoffLimitExceeded" in breach_line and "exit 3" in breach_line
