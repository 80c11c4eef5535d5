"""The load collector's token (loadTest.collector.token): its own Secret, whatever auth.enabled
says, read by the collector and the generators and by no other workload."""

from __future__ import annotations

import base64

from services.common.tokens import MIN_TOKEN_CHARS
from services.green_agent.load.collector_app import loopback
from tests.k8s.rendering import Doc, Rendered, containers, env, pod_spec, render, token_source

SECRET = "nfcorpus-retrieval-load-collector-token"
VARIABLE = "GREEN_LOAD_COLLECTOR_TOKEN_FILE"


def _holders(r: Rendered) -> dict[str, Doc]:
    (collector,) = r.component("Deployment", "load-collector")
    (generators,) = r.component("Job", "load-generator")
    return {"collector": collector, "generators": generators}


def _token(r: Rendered) -> str:
    (token,) = r.get("Secret", SECRET)["data"].values()
    return base64.b64decode(token).decode()


def _mounts_secret(workload: Doc, name: str) -> bool:
    volumes = pod_spec(workload).get("volumes") or []
    return any((v.get("secret") or {}).get("secretName") == name for v in volumes)


def test_the_collector_and_the_generators_read_the_token_of_its_own_secret() -> None:
    # With auth off the token is there all the same: the collector is reachable by every pod
    # where the NetworkPolicy is not enforced.
    r = render("ci/embedded-values.yaml", auth__enabled=False)
    token = _token(r)
    assert len(token) >= 16 and token.isalnum()  # what the collector accepts
    assert set(r.get("Secret", SECRET)["data"]) == {"token"}
    for workload in _holders(r).values():
        assert token_source(workload, VARIABLE) == (SECRET, "token")
    # Nobody else: not the agents, the MCP server, the helm test pod.
    held = {id(w) for w in _holders(r).values()}
    for workload in r.workloads():
        if id(workload) in held:
            continue
        name = workload["metadata"]["name"]
        assert not _mounts_secret(workload, SECRET), name
        assert all(VARIABLE not in env(c) for c in containers(workload)), name


def test_a_given_token_is_the_secrets_and_an_existing_secret_is_mounted_as_is() -> None:
    given = render("ci/embedded-values.yaml", loadTest__collector__token__value="g" * 24)
    assert _token(given) == "g" * 24
    existing = render(
        "ci/embedded-values.yaml",
        loadTest__collector__token__existingSecret="ops-load-token",
        loadTest__collector__token__existingSecretKey="collector",
    )
    assert not [s for s in existing.of_kind("Secret") if s["metadata"]["name"] == SECRET]
    for workload in _holders(existing).values():
        assert token_source(workload, VARIABLE) == ("ops-load-token", "collector")


def test_without_the_load_test_there_is_no_token() -> None:
    r = render("ci/embedded-values.yaml", loadTest__enabled=False)
    assert SECRET not in [s["metadata"]["name"] for s in r.of_kind("Secret")]


def test_the_collector_serves_beyond_loopback_so_every_way_of_setting_it_gives_it_a_token() -> None:
    # load-collect refuses a non-loopback address without a token: the chart always mounts one.
    for sets in (
        {"auth__enabled": False},
        {"auth__enabled": True},
        {"loadTest__collector__token__value": "g" * 24},
        {"loadTest__collector__token__existingSecret": "ops-load-token"},
    ):
        r = render("ci/embedded-values.yaml", **sets)
        (collector,) = r.component("Deployment", "load-collector")
        (container,) = containers(collector)
        command = container["command"]
        assert not loopback(command[command.index("--host") + 1]), sets
        secret, key = token_source(collector, VARIABLE)
        if secret == SECRET:
            assert len(_token(r)) >= MIN_TOKEN_CHARS, sets
        else:
            assert (secret, key) == ("ops-load-token", "token"), sets


def test_the_collector_answers_the_names_the_generators_post_to() -> None:
    """GREEN_ALLOWED_HOSTS: its Service's names on its port, and loopback for a port-forward."""
    r = render("ci/embedded-values.yaml", auth__enabled=False)
    (collector,) = containers(_holders(r)["collector"])
    hosts = env(collector)["GREEN_ALLOWED_HOSTS"].split(",")
    service = r.api_service("load-collector")
    port = service["spec"]["ports"][0]["port"]
    assert f"{service['metadata']['name']}:{port}" in hosts
    assert "127.0.0.1:*" in hosts and "*" not in hosts
    (generator,) = containers(_holders(r)["generators"], init=False)
    report_to = generator["args"] if "args" in generator else generator["command"]
    target = next(a for a in report_to if str(a).startswith("http://") and "/reports" in str(a))
    assert target.removeprefix("http://").split("/")[0] in hosts
