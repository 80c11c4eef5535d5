"""What a load report's figures must hold together, and where a collector without a token may
serve: the checks on their own, over reports built as a run builds them."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.evaluation.mcp_counters import CacheEffect
from services.green_agent.load.collector import Collector
from services.green_agent.load.collector_app import loopback, tokens_to_serve
from services.green_agent.load.invariants import figures_problems
from services.green_agent.load.recorder import merge_load_reports
from services.green_agent.load.report import LoadReport
from tests.support.load_reports import report_of


def _report(worker: int = 0, *, closed: bool = False) -> LoadReport:
    outcomes = [
        QueryOutcome(f"q{i}", 0.01 * (i + 1), ["MED-1"], started_s=i / 4)
        if i % 4
        else QueryOutcome(f"q{i}", 0.02, None, "timeout", "slow", started_s=i / 4)
        for i in range(12)
    ]
    return report_of(
        outcomes,
        dropped=1,
        wall_s=3.0,
        agent="http://agent",
        protocol="1.0",
        duration_s=3.0,
        concurrency=2 if closed else None,
        rate=None if closed else 4.0,
        worker=worker,
        result_cache=CacheEffect(lookups=-3, hits=-1, hit_ratio=None),
    )


@pytest.mark.parametrize("closed", [False, True])
def test_a_run_s_reports_and_their_merge_hold(closed: bool) -> None:
    reports = [_report(0, closed=closed), _report(1, closed=closed)]
    assert reports[0].errors == 3 and reports[0].errors_by_reason == {"timeout": 3}
    for report in [*reports, merge_load_reports(reports)]:
        # A server restarted during the run sets its counters back: the cache's figures may be
        # negative, the report holds all the same.
        assert figures_problems(report) == []
        assert LoadReport.model_validate_json(report.model_dump_json()) == report


def test_the_review_s_report_does_not_read_and_says_why() -> None:
    body = _report().model_dump(mode="json")
    body.update(requests=0, errors_by_reason={"timeout": 4})
    with pytest.raises(ValidationError) as refused:
        LoadReport.model_validate(body)
    assert "ok 9 and errors 3 add up to 12, not requests 0" in str(refused.value)
    assert "errors_by_reason adds up to 4, not errors 3" in str(refused.value)


def test_every_problem_is_named_by_its_path() -> None:
    report = _report().model_copy(update={"dropped": -1, "cpu_s": float("nan")})
    timeline = [p.model_copy(update={"failed": p.failed + 1}) for p in report.timeline]
    report = report.model_copy(update={"timeline": timeline})
    problems = figures_problems(report)
    assert "dropped is -1: a figure is not negative" in problems
    assert "cpu_s is nan: a figure is a finite number" in problems
    assert any(p.startswith("the timeline counts 9 answered and ") for p in problems)


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("127.0.0.1", True),
        ("127.3.2.1", True),
        ("::1", True),
        ("[::1]", True),
        ("localhost", True),
        ("LOCALHOST", True),
        ("0.0.0.0", False),
        ("::", False),
        ("10.0.0.7", False),
        ("collector.example", False),
        ("", False),
    ],
)
def test_loopback_is_this_machine_only(host: str, local: bool) -> None:
    assert loopback(host) is local


def test_without_a_token_the_collector_serves_loopback_only() -> None:
    tokens = {"a-token-of-sixteen-chars": "worker"}
    assert tokens_to_serve("0.0.0.0", tokens) == tokens
    assert tokens_to_serve("127.0.0.1", {}) == {}
    with pytest.raises(ValueError, match="Set GREEN_LOAD_COLLECTOR_TOKEN or GREEN_LOAD_COLLEC"):
        tokens_to_serve("0.0.0.0", {})


def test_reports_that_hold_but_whose_sum_does_not_are_refused_and_nothing_is_held() -> None:
    collector = Collector(2)
    huge = []
    for worker in range(2):
        report = _report(worker)
        stages = [
            s.model_copy(update={"start_target": 0.45e308, "target": 0.45e308})
            for s in report.stages
        ]
        huge.append(report.model_copy(update={"stages": stages}))
    assert collector.add(huge[0], keep=False) is None
    refused = collector.add(huge[1], keep=False)
    assert refused is not None and refused.status == 422
    assert refused.reason.startswith("the merged figures do not hold: body: Value error, ")
    assert "target_rate is inf: a figure is a finite number" in refused.reason
    assert sorted(collector.reports) == [0] and not collector.complete
