"""The release notes: the green agent A2A server allowed to call the release's own Services only,
and the commands that send a caller's token, which never put it in a pod's spec."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import PurePosixPath

from services.green_agent.evaluation.egress import AllowedOrigins
from tests.k8s.rendering import NAMESPACE, RELEASE, notes


def _allowed(text: str) -> AllowedOrigins:
    (value,) = re.findall(r'--env="GREEN_ALLOWED_ORIGINS=([^"]+)"', text)
    return AllowedOrigins(value.split(","))


def _commands(text: str) -> list[list[str]]:
    """Each shell command of the notes (continuation lines joined), split as the shell would."""
    commands: list[list[str]] = []
    current = ""
    for line in text.splitlines():
        stripped = line.strip()
        if current or stripped.startswith(("kubectl", "printf")):
            current += " " + stripped.removesuffix("\\")
            if not stripped.endswith("\\"):
                commands.append(shlex.split(current, comments=True))
                current = ""
    return commands


def _runs(text: str) -> dict[str, list[str]]:
    """The `kubectl run` commands: the pods the notes start, by name."""
    return {c[c.index("run") + 1]: c for c in _commands(text) if "run" in c[:4]}


def test_the_served_green_agent_may_call_every_name_of_the_release_services_only() -> None:
    allowed = _allowed(notes("purpleAgent.service.port=8080"))
    for service, port in (("purple-agent", 8080), ("mcp-server", 8000)):
        name = f"{RELEASE}-{service}"
        for host in (name, f"{name}.{NAMESPACE}", f"{name}.{NAMESPACE}.svc.cluster.local"):
            assert allowed.refusal(f"http://{host}:{port}/") is None, host
        assert allowed.refusal(f"http://{name}:{port + 1}/") is not None
    for elsewhere in ("http://127.0.0.1:9009/", "http://kubernetes.default.svc:443/"):
        assert allowed.refusal(elsewhere) is not None, elsewhere


def test_no_command_puts_a_token_in_a_pods_spec() -> None:
    for text in (notes(), notes("auth.enabled=true")):
        for pod, command in _runs(text).items():
            spec = " ".join(command)
            assert "$TOKEN" not in spec and "GREEN_AGENT_TOKEN=" not in spec, pod
    assert "GREEN_AGENT_TOKEN" not in notes()  # without authentication no token at all


def test_with_authentication_on_the_pods_read_the_token_from_a_secret_of_its_own() -> None:
    text = notes("auth.enabled=true")
    assert "--from-literal" not in text  # a literal would show in the shell's history
    (create,) = [c for c in _commands(text) if "--from-file=token=/dev/stdin" in c]
    secret = create[create.index("generic") + 1]
    runs = _runs(text)
    assert set(runs) == {"nfcorpus-eval", "nfcorpus-green"}
    for pod, command in runs.items():
        token_file = PurePosixPath(_envs(command)["GREEN_AGENT_TOKEN_FILE"])
        _assert_mounted(command, pod, secret, token_file)
        assert token_file.name == "token"  # the key the Secret was created with


def _envs(command: list[str]) -> dict[str, str]:
    envs = [a.removeprefix("--env=").partition("=") for a in command if a.startswith("--env=")]
    return {k: v for k, _, v in envs}


def _assert_mounted(command: list[str], pod: str, secret: str, file: PurePosixPath) -> None:
    """``file``'s folder is ``secret`` mounted, read-only, in ``pod``'s container."""
    assert "--override-type=strategic" in command
    (overrides,) = [a for a in command if a.startswith("--overrides=")]
    spec = json.loads(overrides.removeprefix("--overrides="))["spec"]
    (volume,) = [v for v in spec["volumes"] if v["secret"] == {"secretName": secret}]
    (container,) = spec["containers"]
    assert container["name"] == pod  # strategic merge: kubectl run names the container so
    mount = {"name": volume["name"], "mountPath": str(file.parent), "readOnly": True}
    assert mount in container["volumeMounts"]


def test_the_served_green_agent_takes_a_token_of_its_own_from_its_callers() -> None:
    # Its port-forward is on the operator's 127.0.0.1, where any page a browser shows may post.
    for text in (notes(), notes("auth.enabled=true")):
        (create,) = [c for c in _commands(text) if "--from-file=tokens=/dev/stdin" in c]
        secret = create[create.index("generic") + 1]
        green = _runs(text)["nfcorpus-green"]
        tokens_file = PurePosixPath(_envs(green)["GREEN_AUTH_TOKENS_FILE"])
        assert tokens_file.name == "tokens"  # the key the Secret was created with
        _assert_mounted(green, "nfcorpus-green", secret, tokens_file)
        assert "Authorization: Bearer $GREEN_TOKEN" in text
        assert "GREEN_TOKEN" not in " ".join(green)  # read from the Secret, not the spec


def test_with_the_load_test_on_the_notes_name_its_job_and_collector() -> None:
    assert "Load test" not in notes()
    text = notes("loadTest.enabled=true", "loadTest.workers=4")
    assert f"4 generators of Job {RELEASE}-load-generator-r1" in text
    assert f"port-forward svc/{RELEASE}-load-collector 8080:8080" in text
