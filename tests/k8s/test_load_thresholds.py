"""The load test's budgets (loadTest.thresholds): in every generator's arguments, as the CLI parses
them, and a malformed one refused when the chart renders, not when the Job runs."""

from __future__ import annotations

import pytest

from services.green_agent.cli import build_parser
from services.green_agent.settings import GreenSettings
from tests.k8s.rendering import RenderError, containers, render

FULL = "ci/full-values.yaml"


def _generator_args(*values: str, **sets: object) -> list[str]:
    (job,) = render(*values, **sets).component("Job", "load-generator")
    (container,) = containers(job)
    return [*container["command"][3:], *container["args"]]


def test_the_budgets_reach_every_generator_as_the_cli_reads_them() -> None:
    args = _generator_args(FULL)
    # The CLI reads the rendered arguments (the pod's index as the kubelet expands it).
    parsed = build_parser(GreenSettings()).parse_args(
        [a.replace("$(WORKER_INDEX)", "0") for a in args]
    )
    budgets = [b.text for group in parsed.threshold for b in group]
    assert budgets == ["p99<1s", "p99.9<2.5s", "errors<0.5%", "rate>=600"]
    (collector,) = render(FULL).component("Deployment", "load-collector")
    # The budgets travel in the reports: the collector's merge judges the generators' own.
    assert all("--threshold" not in c["command"] for c in containers(collector))


def test_without_budgets_no_generator_is_given_one() -> None:
    assert "--threshold" not in _generator_args(loadTest__enabled=True)


@pytest.mark.parametrize("budget", ["p99<1", "p99 1s", "latency<1s", "errors<1ms", "rate>=1s"])
def test_a_malformed_budget_fails_the_render(budget: str) -> None:
    with pytest.raises(RenderError, match="thresholds"):
        render(FULL, **{"loadTest__thresholds[0]": budget})
