"""agentbeats/scenario.json5 against what Amber requires, and against what our agents expect.

Offline: the gateway's manifest is its v0.3 interface as tests/support/amber.py states it, the
other manifests are the repository's own. tests/agentbeats/test_gateway_run.py runs the scenario.
A participant that declares a secret gets it as the scenario's comment says: a key of the
scenario's config_schema, filled from the repository secret of its name by the workflow's own
export step, then into the participant's config as its schema requires.
"""

from __future__ import annotations

import copy
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import json5
import jsonschema  # type: ignore[import-untyped]  # no stubs
import pytest

from harness.processes import REPO
from services.green_agent.assessment.request import ROLE, AssessmentConfig
from tests.support.amber import (
    GATEWAY_MANIFEST_URL,
    GATEWAY_V03,
    amber_problems,
    component_config,
    env_var_for_path,
    root_config,
    scenario_problems,
)
from tests.support.workflow import run_step

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
    # jq's paths into the scenario (not the workflow's own, such as steps.metadata.outputs).
    for path in re.findall(r"(?<![\w\]])(\.components\.[\w.]+|\.metadata\.[\w.]+)", workflow):
        node: Any = scenario
        for key in path.strip(".").split("."):
            assert isinstance(node, dict) and key in node, f"{path}: no {key} in scenario.json5"
            node = node[key]
    assert ".components.gateway.config.assessment_config" in workflow
    assert ".metadata.agentbeats_ids" in workflow


#: A participant that takes an API key, declared as the template's README and the agents on
#: published leaderboards declare theirs: a secret string of its config, in its environment.
SECRET_PARTICIPANT: dict[str, Any] = {
    "manifest_version": "0.1.0",
    "config_schema": {
        "type": "object",
        "properties": {"openai_api_key": {"type": "string", "secret": True}},
        "required": ["openai_api_key"],
        "additionalProperties": False,
    },
    "program": {
        "image": "ghcr.io/someone/retrieval-agent:1.0.0",
        "entrypoint": "agent --host 0.0.0.0 --port 9009",
        "env": {"OPENAI_API_KEY": "${config.openai_api_key}"},
        "network": {"endpoints": [{"name": "a2a_endpoint", "port": 9009}]},
    },
    "provides": {"a2a": {"kind": "a2a", "endpoint": "a2a_endpoint"}},
    "exports": {"a2a": "a2a"},
}


def jsonschema_errors(schema: dict[str, Any], value: Any) -> list[str]:
    return [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(value)]


def _with_secret_manifest(reference: str) -> dict[str, Any] | None:
    return (
        SECRET_PARTICIPANT if reference == "./secret-participant.json5" else manifest_of(reference)
    )


def _with_secret_participant() -> dict[str, Any]:
    """The scenario as a submitter edits it for SECRET_PARTICIPANT (scenario.json5's comment)."""
    scenario = copy.deepcopy(_load())
    key = "retrieval_agent_openai_api_key"  # <component>_<key>, as Quick Submit names it
    scenario["config_schema"]["properties"][key] = {"type": "string", "secret": True}
    scenario["config_schema"]["required"].append(key)
    scenario["components"]["retrieval_agent"] = {
        "manifest": "./secret-participant.json5",
        "config": {"openai_api_key": "${config." + key + "}"},
    }
    return scenario


def test_a_participant_that_declares_a_secret_gets_it_from_a_repository_secret(
    tmp_path: Path,
) -> None:
    scenario = _with_secret_participant()
    assert amber_problems(SECRET_PARTICIPANT) == []
    assert scenario_problems(scenario, _with_secret_manifest) == []
    # The repository secret of the key's name, through the workflow's own export step...
    (tmp_path / "scenario.json5").write_text(json.dumps(scenario))
    secrets = {"RETRIEVAL_AGENT_OPENAI_API_KEY": "sk-submitter", "GITHUB_TOKEN": "ghs_x"}
    run = run_step(
        REPO / "agentbeats/run-scenario.yml",
        "eval",
        "Export AMBER_CONFIG vars",
        tmp_path,
        {"SECRETS_JSON": json.dumps(secrets)},
    )
    assert run.process.returncode == 0, run.output
    # ...is Amber's variable for the key, the one Quick Submit's runner sets for the same
    # participant's secret (AMBER_CONFIG_<NAME>_<KEY>, quick-submit-runner.yml)...
    variable = env_var_for_path("retrieval_agent_openai_api_key")
    assert variable == "AMBER_CONFIG_RETRIEVAL_AGENT_OPENAI_API_KEY"
    assert run.github_env == {variable: "sk-submitter"}
    # ...and fills the participant's config as its schema requires.
    config = root_config(scenario["config_schema"], run.github_env)
    filled = component_config(scenario["components"]["retrieval_agent"]["config"], config)
    assert filled == {"openai_api_key": "sk-submitter"}
    assert jsonschema_errors(SECRET_PARTICIPANT["config_schema"], filled) == []
    # Without the secret Amber has no value for a required key, and refuses to run.
    with pytest.raises(ValueError, match="retrieval_agent_openai_api_key"):
        root_config(scenario["config_schema"], {})


def test_a_secret_the_scenario_does_not_declare_is_refused() -> None:
    # Amber reads only declared keys: a participant's ${config...} needs one, and a variable
    # for an undeclared key is refused.
    scenario = _with_secret_participant()
    del scenario["config_schema"]["properties"]["retrieval_agent_openai_api_key"]
    scenario["config_schema"]["required"] = []
    problems = scenario_problems(scenario, _with_secret_manifest)
    assert any("undeclared config key" in p for p in problems), problems
    with pytest.raises(ValueError, match="does not correspond to a leaf"):
        root_config(scenario["config_schema"], {"AMBER_CONFIG_RETRIEVAL_AGENT_OPENAI_API_KEY": "k"})


def test_the_scenario_as_it_stands_fills_every_component_without_a_secret() -> None:
    scenario = _load()
    config = root_config(scenario["config_schema"], {})
    for name, component in scenario["components"].items():
        manifest = manifest_of(component["manifest"])
        assert manifest is not None
        filled = component_config(component.get("config", {}), config)
        assert jsonschema_errors(manifest["config_schema"], filled) == [], name
