"""agentbeats/scenario.json5 against what Amber requires, and against what our agents expect.

Offline: the gateway's manifest is its v0.3 interface as tests/support/amber.py states it, the
other manifests are the repository's own. tests/agentbeats/test_gateway_run.py runs the scenario.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Callable
from typing import Any

import json5
import pytest

from harness.processes import REPO
from services.green_agent.assessment.request import ROLE, AssessmentConfig
from tests.support.amber import GATEWAY_MANIFEST_URL, GATEWAY_V03, scenario_problems

SCENARIO = REPO / "agentbeats/scenario.json5"
#: How many NFCorpus test queries have judgements (tests/unit/test_nfcorpus_dataset.py).
NFCORPUS_TEST_QUERIES = 323


def _load() -> dict[str, Any]:
    return dict(json5.loads(SCENARIO.read_text()))


def manifest_of(reference: str) -> dict[str, Any] | None:
    """A component's manifest: the gateway's interface, or a file beside the scenario."""
    if reference == GATEWAY_MANIFEST_URL:
        return GATEWAY_V03
    path = (SCENARIO.parent / reference).resolve()
    if reference.startswith(("http:", "https:")) or not path.is_file():
        return None
    return dict(json5.loads(path.read_text()))


def test_the_scenario_has_what_amber_requires() -> None:
    assert scenario_problems(_load(), manifest_of) == []


def test_the_gateway_sends_our_green_agent_the_assessment_it_runs() -> None:
    scenario = _load()
    gateway = scenario["components"]["gateway"]["config"]
    AssessmentConfig.model_validate(gateway["assessment_config"])
    roles = gateway["participant_roles"]
    # The participant's role is the one our green agent reads; each role names its component,
    # as the template does, so the results file's ids are keyed by role.
    assert roles["purple1"] == ROLE
    for slot, role in roles.items():
        assert {"to": f"#gateway.{slot}", "from": f"#{role}.a2a"} in scenario["bindings"]
    proxy = {"to": f"#{roles['green']}.proxy", "from": "#gateway.proxy", "weak": True}
    assert proxy in scenario["bindings"]
    assert scenario["exports"] == {"results": "#gateway.results"}


def test_the_scenario_and_the_green_manifest_say_one_assessment() -> None:
    # Quick Submit builds its scenario from the green manifest's metadata, a self-run from
    # scenario.json5: both land on one board, so they run the same assessment, every NFCorpus
    # test query.
    scenario = _load()["components"]["gateway"]["config"]["assessment_config"]
    green = json5.loads((REPO / "agentbeats/amber-manifest.green.json5").read_text())
    assert green["metadata"]["assessment_config"] == scenario
    assert scenario == {"num_queries": NFCORPUS_TEST_QUERIES, "top_k": 5, "random_seed": 42}


def _bind(scenario: dict[str, Any], index: int, **changes: str) -> None:
    scenario["bindings"][index].update(changes)


BREAKAGES: dict[str, tuple[Callable[[dict[str, Any]], object], str]] = {
    "version": (lambda s: s.update(manifest_version="0.2.0"), "manifest_version"),
    "slot": (lambda s: _bind(s, 0, to="#gateway.purple9"), "no such slot"),
    "capability": (lambda s: _bind(s, 1, **{"from": "#retrieval_agent.mcp"}), "no such capability"),
    "kind": (lambda s: _bind(s, 0, to="#gateway.green_mcp"), "a a2a capability in a mcp slot"),
    "unbound": (lambda s: s["bindings"].pop(1), "slot gateway.purple1 is not bound"),
    "twice": (lambda s: s["bindings"].append(dict(s["bindings"][0])), "bound twice"),
    "export": (lambda s: s["exports"].update(results="#gateway.nothing"), "exports results"),
    "config key": (
        lambda s: s["components"]["gateway"]["config"].update(x="${config.token}"),
        "undeclared config key",
    ),
    "config schema": (
        lambda s: s["components"]["nfcorpus_evaluator"].update(config={"unknown": 1}),
        "component nfcorpus_evaluator: config Additional properties",
    ),
    "manifest": (
        lambda s: s["components"]["retrieval_agent"].update(manifest="./missing.json5"),
        "component retrieval_agent: no manifest",
    ),
    "ids": (lambda s: s["metadata"]["agentbeats_ids"].pop("retrieval_agent"), "agentbeats_ids"),
}


@pytest.mark.parametrize("name", sorted(BREAKAGES))
def test_a_broken_scenario_is_refused(name: str) -> None:
    breakage, problem = BREAKAGES[name]
    scenario = copy.deepcopy(_load())
    breakage(scenario)
    problems = scenario_problems(scenario, manifest_of)
    assert any(problem in p for p in problems), problems


def test_the_manifests_it_names_are_the_repositorys() -> None:
    components = _load()["components"]
    assert components["gateway"]["manifest"] == GATEWAY_MANIFEST_URL
    assert manifest_of(components["nfcorpus_evaluator"]["manifest"]) == json5.loads(
        (REPO / "agentbeats/amber-manifest.green.json5").read_text()
    )
    assert manifest_of(components["retrieval_agent"]["manifest"]) == json5.loads(
        (REPO / "amber-manifest.json5").read_text()
    )


def test_the_workflow_patches_and_reads_what_the_scenario_holds() -> None:
    # agentbeats/run-scenario.yml patches each shard into the gateway's assessment_config and
    # names the results file's participants from the agentbeats ids: both paths must exist.
    workflow = (REPO / "agentbeats/run-scenario.yml").read_text()
    scenario = _load()
    for path in re.findall(r"'?(\.components\.[\w.]+|\.metadata\.[\w.]+)", workflow):
        node: Any = scenario
        for key in path.strip(".").split("."):
            assert isinstance(node, dict) and key in node, f"{path}: no {key} in scenario.json5"
            node = node[key]
    assert ".components.gateway.config.assessment_config" in workflow
    assert ".metadata.agentbeats_ids" in workflow
