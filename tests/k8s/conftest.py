"""tests/k8s need the real helm and kubectl from `make tools-k8s`; without them every test fails."""

from __future__ import annotations

import pytest

from tests.k8s.rendering import Rendered, ToolMissing, render, scenarios, tool, values_examples


@pytest.fixture(autouse=True, scope="session")
def _k8s_tools() -> None:
    problem = None
    try:
        tool("helm")
        tool("kubectl")
    except ToolMissing as e:
        problem = str(e)
    if problem:
        pytest.fail(problem, pytrace=False)


@pytest.fixture(params=scenarios() + values_examples())
def rendered(request: pytest.FixtureRequest) -> Rendered:
    """The chart rendered with one ``ci/*-values.yaml`` scenario or ``examples/values-*.yaml``.

    What every release must hold (probes, hardening, selectors, ports, wiring) holds for the
    values examples too: they are what a user installs.
    """
    return render(request.param)
