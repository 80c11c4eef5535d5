"""The AgentBeats manifests: what Amber requires of them, and that their commands are ours.

Amber (the AgentBeats deployer) reads ``amber-manifest.json5``: a ``manifest_version``, a JSON
Schema of the deployer's config, the program (image, entrypoint, env, network endpoints), what
the agent provides and exports, and for a green agent the slots it connects to and the
assessment it expects. Each reference must resolve: an export names something provided, a
provided capability names an endpoint, ``${slots.X}`` names a declared slot, the entrypoint's
``--port`` is the endpoint's port and its module is one of ours.
"""

from __future__ import annotations

import importlib.util
import json
import re
import shlex
from typing import Any

import json5
import pytest
import yaml

from harness.processes import REPO
from services.green_agent.assessment.request import ROLE, AssessmentConfig
from services.green_agent.evaluation.egress import AllowedOrigins
from services.green_agent.settings import load_settings
from tests.support.amber import amber_problems

MANIFESTS = {
    "purple": REPO / "amber-manifest.json5",
    "green": REPO / "agentbeats/amber-manifest.green.json5",
}
WORKFLOW = REPO / ".github/workflows/image.yml"


def _image_entrypoint() -> list[str]:
    # The last stage's: the image a build without --target makes (the indexer's target is another).
    *_, line = [
        x for x in (REPO / "Dockerfile").read_text().splitlines() if x.startswith("ENTRYPOINT")
    ]
    return list(json.loads(line.removeprefix("ENTRYPOINT")))


def _load(which: str) -> dict[str, Any]:
    return dict(json5.loads(MANIFESTS[which].read_text()))


@pytest.mark.parametrize("which", sorted(MANIFESTS))
def test_the_manifest_has_what_amber_requires(which: str) -> None:
    assert amber_problems(_load(which)) == []


@pytest.mark.parametrize(
    ("breakage", "problem"),
    [
        (lambda m: m.update(manifest_version="0.2"), "manifest_version"),
        (lambda m: m["config_schema"].update(type=7), "config_schema is no JSON Schema"),
        (lambda m: m["program"].pop("network"), "program lacks ['network']"),
        (lambda m: m["program"]["env"].update(X="${slots.nowhere.url}"), "undeclared slot"),
        (lambda m: m["program"]["env"].update(X="${config.nothing}"), "undeclared config key"),
        (lambda m: m["exports"].update(extra="nothing"), "exports nothing"),
        (lambda m: m["provides"]["a2a"].update(endpoint="none"), "provides a2a"),
    ],
    ids=["version", "schema", "program", "slot", "config", "export", "endpoint"],
)
def test_a_broken_manifest_is_refused(breakage: Any, problem: str) -> None:
    manifest = _load("green")
    breakage(manifest)
    assert any(problem in p for p in amber_problems(manifest)), amber_problems(manifest)


@pytest.mark.parametrize("which", sorted(MANIFESTS))
def test_the_entrypoint_is_our_command_on_the_endpoint_port(which: str) -> None:
    program = _load(which)["program"]
    argv = shlex.split(program["entrypoint"])
    assert argv[:2] == ["python", "-m"] and importlib.util.find_spec(argv[2]) is not None
    port = int(argv[argv.index("--port") + 1])
    assert [e["port"] for e in program["network"]["endpoints"]] == [port]
    assert argv[argv.index("--host") + 1] == "0.0.0.0"  # reachable from the scenario's network


def test_both_manifests_name_the_image_the_workflow_publishes() -> None:
    workflow = yaml.safe_load(WORKFLOW.read_text())
    published = workflow["env"]["IMAGE"].replace(
        "${{ github.repository_owner }}", "(?P<owner>[\\w.-]+)"
    )
    for which in MANIFESTS:
        image = _load(which)["program"]["image"]
        name, tag = image.rsplit(":", 1)
        assert re.fullmatch(published, name), image
        assert tag == "latest"  # what the workflow publishes from main


def test_the_green_manifest_describes_the_assessment_it_runs() -> None:
    manifest = _load("green")
    assert manifest["metadata"]["participant_roles"] == [ROLE]
    AssessmentConfig.model_validate(manifest["metadata"]["assessment_config"])
    # It reaches its participant through the gateway's proxy (agentbeats/scenario.json5).
    assert manifest["slots"] == {"proxy": {"kind": "a2a"}}
    assert manifest["program"]["env"]["AMBER_HINT_PROXY"] == "${slots.proxy}"


def test_the_workflow_builds_for_amd64_and_publishes_latest_and_semver() -> None:
    text = WORKFLOW.read_text()
    workflow = yaml.safe_load(text)
    assert workflow[True]["push"] == {"branches": ["main"], "tags": ["v*"]}  # YAML's "on"
    assert "BUILD_FLAGS: --platform linux/amd64" in text
    assert "type=raw,value=latest,enable={{is_default_branch}}" in text
    assert "type=semver,pattern={{version}}" in text
    # The image is built and tested (conformance suite included) before it is pushed.
    steps = workflow["jobs"]["image"]["steps"]
    runs = [s.get("run") for s in steps]
    publish = next(i for i, s in enumerate(steps) if s.get("name") == "Publish")
    assert runs.index("make test-image") < publish


def test_the_compose_scenario_runs_what_the_manifests_describe() -> None:
    services = yaml.safe_load((REPO / "agentbeats/compose.yaml").read_text())["services"]
    for service, which in (("green-agent", "green"), ("retrieval-agent", "purple")):
        spec, program = services[service], _load(which)["program"]
        default = re.fullmatch(r"\$\{NFCORPUS_IMAGE:-(.+)\}", spec["image"])
        assert default is not None and default.group(1) == program["image"]
        # The same command: the compose entrypoint (or the image's own) and its arguments.
        argv = [*spec.get("entrypoint", []), *spec["command"]]
        expected = shlex.split(program["entrypoint"])
        if "entrypoint" not in spec:  # the image's own entrypoint
            argv = [*_image_entrypoint(), *argv]
        assert argv[: len(expected)] == expected, service
        assert spec["read_only"] is True and spec["cap_drop"] == ["ALL"]


def _compose_default(value: str) -> str:
    """What compose substitutes for ``${VAR:-default}`` when VAR is unset."""
    return re.sub(r"\$\{\w+:-([^}]*)\}", r"\1", value)


def test_compose_publishes_on_loopback_and_the_green_agent_calls_only_its_participant() -> None:
    services = yaml.safe_load((REPO / "agentbeats/compose.yaml").read_text())["services"]
    for name, spec in services.items():
        for port in spec["ports"]:
            assert _compose_default(port).startswith("127.0.0.1:"), name
    command = services["retrieval-agent"]["command"]
    participant = command[command.index("--card-url") + 1]  # the URL its card names
    allowed = AllowedOrigins(
        _compose_default(services["green-agent"]["environment"]["GREEN_ALLOWED_ORIGINS"]).split(",")
    )
    assert allowed.refusal(participant) is None
    assert allowed.refusal("http://green-agent:9009/") is not None


@pytest.mark.parametrize(
    "slot_url", ["http://127.0.0.1:20000", "http://c1-retrieval.scenario-x.svc.cluster.local:9009"]
)
def test_the_green_manifest_allows_the_slot_and_the_gateways_proxy(slot_url: str) -> None:
    env = _load("green")["program"]["env"]
    value = env["GREEN_ALLOWED_ORIGINS"].replace("${slots.proxy.url}", slot_url)
    allowed = AllowedOrigins(value.split(","))  # as Amber renders it for docker or Kubernetes
    for url in (slot_url + "/", f"http://127.0.0.1:8080/{ROLE}"):
        assert allowed.refusal(url) is None, url
    for url in ("http://169.254.169.254/", "http://127.0.0.1:41234/"):
        assert allowed.refusal(url) is not None, url
    # It serves on 0.0.0.0 without callers' tokens: the list must be exact to start at all.
    argv = shlex.split(_load("green")["program"]["entrypoint"])
    host = argv[argv.index("--host") + 1]
    settings = load_settings(host=host, allowed_origins=value)
    assert settings.open_serving_problem(authenticated=False) is None


def test_the_compose_green_agent_starts_on_every_interface() -> None:
    services = yaml.safe_load((REPO / "agentbeats/compose.yaml").read_text())["services"]
    green = services["green-agent"]
    host = green["command"][green["command"].index("--host") + 1]
    allowed = _compose_default(green["environment"]["GREEN_ALLOWED_ORIGINS"])
    settings = load_settings(host=host, allowed_origins=allowed)
    assert settings.open_serving_problem(authenticated=False) is None
