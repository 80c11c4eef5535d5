"""Load-mode arguments and the load report."""

from __future__ import annotations

import pytest

from services.green_agent.client import LegacyAgentClient
from services.green_agent.evaluator import QueryOutcome
from services.green_agent.load import run_load
from services.green_agent.load_report import build_load_report
from tests.support.ports import closed_url


@pytest.mark.parametrize(("concurrency", "rate"), [(None, None), (2, 5.0)])
async def test_exactly_one_pace_is_required(concurrency: int | None, rate: float | None) -> None:
    with closed_url("") as nobody:  # refused before any request: nobody is ever asked
        client = LegacyAgentClient(nobody, timeout_s=1, max_connections=1)
        try:
            with pytest.raises(ValueError, match="exactly one of concurrency or rate"):
                await run_load(
                    client,
                    [("q", "text")],
                    frozenset(),
                    top_k=5,
                    duration_s=1,
                    concurrency=concurrency,
                    rate=rate,
                )
        finally:
            await client.aclose()


def test_report_counts_errors_and_times_successes_only() -> None:
    outcomes = [
        QueryOutcome("q1", 0.010, ["MED-1"]),
        QueryOutcome("q2", 0.030, ["MED-2"]),
        QueryOutcome("q3", 5.000, None, "timeout", "no reply in time"),
        QueryOutcome("q4", 4.000, None, "timeout", "no reply in time"),
    ]
    report = build_load_report(
        outcomes,
        dropped=3,
        wall_s=2.0,
        agent="http://a",
        protocol="1.0",
        duration_s=2.0,
        concurrency=None,
        rate=10.0,
    )
    assert (report.requests, report.ok, report.errors, report.dropped) == (4, 2, 2, 3)
    assert report.mode == "open-loop"
    assert report.throughput_rps == pytest.approx(1.0)
    assert report.latency.max_s == pytest.approx(0.030)
    assert report.errors_by_reason == {"timeout": 2}
    assert report.error_samples == ["timeout: no reply in time"]
