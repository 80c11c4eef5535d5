"""Budgets of a load run: the syntax, the verdict on a report's figures, and where it is judged
(a whole run, a merge; never a worker's share alone)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import httpx
import pytest

from services.green_agent.cli import build_parser, main
from services.green_agent.evaluation.evaluator import QueryOutcome
from services.green_agent.load.html_page import render_load_html
from services.green_agent.load.outputs import with_thresholds
from services.green_agent.load.recorder import merge_load_reports
from services.green_agent.load.report import LoadReport
from services.green_agent.load.thresholds import (
    EXIT_BREACHED,
    budget_argument,
    exit_status,
    judge,
    parse_budget,
    parse_budgets,
)
from services.green_agent.load.verdict import merged_report, report_url
from services.green_agent.settings import GreenSettings
from tests.support.load_reports import report_of

#: Latencies of the made-up runs, in seconds (the test checks the arithmetic, no machine).
LATENCIES = [0.010 * (i + 1) for i in range(100)]


def _report(
    latencies: list[float] = LATENCIES,
    failed: int = 0,
    wall_s: float = 10.0,
    worker: int = 0,
    split: bool = False,
) -> LoadReport:
    outcomes = [QueryOutcome(f"q{i}", s, ["MED-1"], started_s=0.0) for i, s in enumerate(latencies)]
    outcomes += [QueryOutcome(f"f{i}", 0.5, None, "timeout", "late") for i in range(failed)]
    return report_of(
        outcomes,
        0,
        wall_s,
        agent="http://agent",
        protocol="0.3",
        duration_s=wall_s,
        concurrency=None,
        rate=10.0,
        worker=worker,
    )


@pytest.mark.parametrize(
    ("text", "measure", "op", "limit", "canonical"),
    [
        ("p99<500ms", "p99", "<", 0.5, "p99<500ms"),
        (" P99.9 <= 1.5 s ", "p99.9", "<=", 1.5, "p99.9<=1.5s"),
        ("p50<1us", "p50", "<", 1e-6, "p50<1us"),
        ("mean<20µs", "mean", "<", 2e-5, "mean<20µs"),
        ("max<3s", "max", "<", 3.0, "max<3s"),
        ("errors<1%", "errors", "<", 0.01, "errors<1%"),
        ("error_ratio<=0.01", "errors", "<=", 0.01, "errors<=0.01"),
        ("rate>=40", "rate", ">=", 40.0, "rate>=40"),
        ("rate>39.5/s", "rate", ">", 39.5, "rate>39.5/s"),
    ],
)
def test_budgets_parse(text: str, measure: str, op: str, limit: float, canonical: str) -> None:
    budget = parse_budget(text)
    assert (budget.measure, budget.op, budget.text) == (measure, op, canonical)
    assert budget.limit == pytest.approx(limit)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ("p99<500", "give the time's unit"),
        ("p99<fast", "is not a time"),
        ("p0<1s", "within (0, 100]"),
        ("p100.1<1s", "within (0, 100]"),
        ("errors<150%", "at most 100%"),
        ("errors<2", "at most 100%"),
        ("errors<1ms", "is not a share"),
        ("rate>=40ms", "is not a rate"),
        ("p99", "is not a budget"),
        ("p99==1s", "is not a budget"),
        ("latency<1s", "unknown measure 'latency'"),
        ("", "is not a budget"),
    ],
)
def test_a_malformed_budget_says_why(text: str, why: str) -> None:
    with pytest.raises(ValueError, match=f"^{re.escape(repr(text))}.*{re.escape(why)}"):
        parse_budget(text)


def test_several_budgets_come_comma_separated_and_repeated_once_each() -> None:
    budgets = parse_budgets(["p99<1s, errors<1%", "p99 < 1s", "rate>=5"])
    assert [b.text for b in budgets] == ["p99<1s", "errors<1%", "rate>=5"]
    with pytest.raises(argparse.ArgumentTypeError, match="unknown measure"):
        budget_argument("p99<1s,speed>1")


def test_the_command_line_refuses_a_malformed_budget_with_status_2(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        build_parser(GreenSettings()).parse_args(["load-merge", "a.json", "--threshold", "p99<500"])
    assert exited.value.code == 2
    assert "--threshold: 'p99<500': give the time's unit" in capsys.readouterr().err


def test_each_budget_is_judged_on_the_report_figures() -> None:
    # 100 answers from a hundredth of a second to 1 s, one failure in 101 requests, 10 s of wall.
    report = _report(failed=1)
    texts = ["p50<600ms", "p90<=0.5s", "p99.9<2s", "max<1s", "min>20ms", "mean<1s"]
    texts += ["errors<1%", "errors<=1%", "rate>=10", "rate>=9"]
    verdicts = judge(parse_budgets(texts), report)
    latency, errors_and_rate = verdicts[:6], verdicts[6:]
    assert [t.passed for t in latency] == [True, False, True, False, False, True]
    assert all(t.passed for t in errors_and_rate)
    assert verdicts[0].measured == report.latency.p50_s
    assert verdicts[6].measured == pytest.approx(1 / 101)
    assert verdicts[8].measured == report.throughput_rps == 10.0
    assert exit_status(verdicts) == EXIT_BREACHED
    assert exit_status(verdicts[:1]) == 0 and exit_status([]) == 0


def test_a_run_with_nothing_to_measure_breaches() -> None:
    nothing = _report(latencies=[], failed=3)
    latency, errors = judge(parse_budgets(["p99<10s", "errors<=100%"]), nothing)
    assert (latency.measured, latency.passed) == (None, False)
    assert "no answers" in latency.line()
    assert errors.passed is True  # three failed of three sent: within 100%
    (sent,) = judge(parse_budgets(["errors<1%"]), _report(latencies=[]))
    assert (sent.measured, sent.passed) == (None, False) and "no requests" in sent.line()


def test_the_report_names_what_it_breached_and_keeps_it_in_its_json() -> None:
    report = with_thresholds(_report(), parse_budgets(["p50<1us", "errors<1%"]))
    assert report.breached == [f"p50<1us: {report.latency.p50_s * 1000:.1f} ms"]
    data = json.loads(report.model_dump_json())
    assert data["breached"] == report.breached
    assert [(t["budget"], t["passed"]) for t in data["thresholds"]] == [
        ("p50<1us", False),
        ("errors<1%", True),
    ]
    assert LoadReport.model_validate(data) == report


def test_a_worker_lists_its_budgets_and_the_merge_judges_them() -> None:
    budgets = parse_budgets(["rate>=10", "p99<2s"])
    halves = [LATENCIES[::2], LATENCIES[1::2]]
    workers = [
        with_thresholds(_report(part, worker=i, split=True), budgets, judged=False)
        for i, part in enumerate(halves)
    ]
    # Each worker's share runs at half the rate: judged alone it would breach the run's budget.
    assert all(t.passed is None and t.measured is None for w in workers for t in w.thresholds)
    assert workers[0].breached == [] and exit_status(workers[0].thresholds) == 0
    merged = merge_load_reports(workers)
    assert [(t.budget, t.passed) for t in merged.thresholds] == [
        ("rate>=10", True),
        ("p99<2s", True),
    ]
    assert merged.thresholds[0].measured == merged.throughput_rps == 10.0


def test_reports_with_other_budgets_are_not_of_one_run() -> None:
    one = with_thresholds(_report(worker=0, split=True), parse_budgets(["p99<2s"]), judged=False)
    other = with_thresholds(_report(worker=1, split=True), parse_budgets(["p99<1s"]), judged=False)
    with pytest.raises(ValueError, match="worker 1 ran"):
        merge_load_reports([one, other])
    assert merge_load_reports([_report(worker=0, split=True)]).thresholds == []


def test_load_merge_judges_the_budgets_it_is_given(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    budgets = parse_budgets(["p99<60s"])
    paths = []
    for i, part in enumerate((LATENCIES[::2], LATENCIES[1::2])):
        paths.append(tmp_path / f"w{i}.json")
        worker = with_thresholds(_report(part, worker=i, split=True), budgets, judged=False)
        paths[-1].write_text(worker.model_dump_json())
    out = tmp_path / "merged.json"
    assert main(["load-merge", *map(str, paths), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["thresholds"][0]["passed"] is True
    status = main(["load-merge", *map(str, paths), "--out", str(out), "--threshold", "p50<1us"])
    assert status == EXIT_BREACHED
    assert "budget breached: p50<1us" in capsys.readouterr().err
    assert json.loads(out.read_text())["breached"][0].startswith("p50<1us: ")


def test_a_worker_finds_the_collector_report_from_its_hand_in_address() -> None:
    for url in (
        "http://c:8080",
        "http://c:8080/",
        "http://c:8080/reports",
        "http://c:8080/reports/",
    ):
        assert report_url(url) == "http://c:8080/report"


async def test_a_worker_waits_for_the_whole_run_and_gives_up_after_its_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    whole = _report()
    answers = [
        httpx.Response(404, json={"error": "the run is not complete", "waiting_for": [1]}),
        httpx.Response(200, json={**json.loads(whole.model_dump_json()), "complete": False}),
        httpx.Response(200, content=whole.model_dump_json().encode()),
    ]
    seen: list[str] = []

    def answer(request: httpx.Request) -> httpx.Response:
        seen.append(str(request.url))
        return answers[min(len(seen), len(answers)) - 1]

    transport = httpx.MockTransport(answer)
    real_client = httpx.AsyncClient

    def client(**kwargs: object) -> httpx.AsyncClient:
        return real_client(transport=transport)

    monkeypatch.setattr(httpx, "AsyncClient", client)
    assert await merged_report("http://c:8080/reports", wait_s=5, poll_s=0.01) == whole
    assert seen == ["http://c:8080/report"] * 3
    answers[2:] = [answers[1]]  # never complete
    seen.clear()
    with pytest.raises(RuntimeError, match=r"not complete .* after 0\.05 s"):
        await merged_report("http://c:8080", wait_s=0.05, poll_s=0.01)


def test_the_page_lists_the_budgets_with_their_verdicts() -> None:
    report = with_thresholds(_report(), parse_budgets(["p50<1us", "errors<1%"]))
    page = render_load_html(report)
    assert "Budgets (1 breached)" in page
    assert "<td>p50&lt;1us</td>" in page and '<td class="breached">BREACHED</td>' in page
    assert '<td class="passed">passed</td>' in page
    assert "Budgets" not in render_load_html(_report())
