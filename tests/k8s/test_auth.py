"""Bearer-token authentication (auth.*): Secrets, token files, checksums and the helm test pod."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from services.common.tokens import authorization, load_tokens
from tests.k8s.rendering import (
    Doc,
    Rendered,
    RenderError,
    containers,
    env,
    load_query_script,
    pod_spec,
    render,
    secret_items,
    token_source,
)

AUTH_SECRET = "nfcorpus-retrieval-auth"
TOKEN_ENV = ("PURPLE_AUTH_TOKENS_FILE", "PURPLE_MCP_TOKEN_FILE", "MCP_AUTH_TOKENS_FILE")
# What each component reads: env variable -> the auth.* part whose token file it names.
PURPLE_FILES = {"PURPLE_AUTH_TOKENS_FILE": "clientTokens", "PURPLE_MCP_TOKEN_FILE": "mcpToken"}
MCP_FILES = {"MCP_AUTH_TOKENS_FILE": "mcpToken"}
DEFAULT_KEYS = {"clientTokens": "client-tokens", "mcpToken": "mcp-token"}
# The chart's own callers: caller name -> the key of its token in the callers' Secret.
OWN_CALLERS = {"load-generator": "load-generator-token", "helm-test": "helm-test-token"}


def workload(r: Rendered, component: str) -> Doc:
    if component == "test":
        (pod,) = r.of_kind("Pod")
        return pod
    (deployment,) = r.component("Deployment", component)
    return deployment


def pod_annotations(deployment: Doc) -> dict[str, str]:
    return dict(deployment["spec"]["template"]["metadata"].get("annotations") or {})


def secret_data(r: Rendered) -> dict[str, str]:
    secret = r.get("Secret", AUTH_SECRET)
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


def test_auth_is_off_by_default() -> None:
    r = render("ci/default-values.yaml")
    assert [s["metadata"]["name"] for s in r.of_kind("Secret")] == [
        "nfcorpus-retrieval-qdrant-api-key"
    ]
    for component in ("purple-agent", "mcp-server", "test"):
        w = workload(r, component)
        (c,) = containers(w)
        assert not set(TOKEN_ENV) & set(env(c)), component
        assert "A2A_TOKEN_FILE" not in env(c)
        assert not [v for v in pod_spec(w).get("volumes", []) if "secret" in v], component
    for component in ("purple-agent", "mcp-server"):
        assert "checksum/auth" not in pod_annotations(workload(r, component))


def callers(tmp_path: Path, tokens: str) -> dict[str, str]:
    """Token -> caller name, as the purple agent reads the callers' tokens file."""
    path = tmp_path / "tokens"
    path.write_text(tokens)
    return load_tokens(None, path)


def sent(tmp_path: Path, item: str, script: bool) -> str:
    """The token sent with a token file that holds ``item``: by the helm test pod's script
    (``script``), else by the green agent."""
    path = tmp_path / "token"
    path.write_text(item)
    if script:
        token: str = load_query_script().read_token(str(path))
        return token
    header = authorization(None, path)
    assert header is not None
    return header.removeprefix("Bearer ")


def test_generated_tokens_reach_both_workloads_as_files(tmp_path: Path) -> None:
    r = render("ci/default-values.yaml", auth__enabled=True)
    data = secret_data(r)
    assert set(data) == {"client-tokens", "mcp-token", "scrape-token", *OWN_CALLERS.values()}
    for key in ("mcp-token", "scrape-token", *OWN_CALLERS.values()):
        assert len(data[key]) >= 16 and data[key].isalnum()  # what the services accept
    # One generated caller, then the chart's own callers, each by name with its own token.
    accepted = callers(tmp_path, data["client-tokens"])
    assert len(accepted) == 3 and data["mcp-token"] not in accepted
    assert data["scrape-token"] not in accepted  # one token per purpose: test_scrape_token
    for name, key in OWN_CALLERS.items():
        assert accepted[data[key]] == name
    for component, files in (("purple-agent", PURPLE_FILES), ("mcp-server", MCP_FILES)):
        w = workload(r, component)
        for variable, part in files.items():
            assert token_source(w, variable) == (AUTH_SECRET, DEFAULT_KEYS[part]), variable
    # The sender and the acceptor of the MCP token read the same key of the same Secret.
    assert token_source(workload(r, "purple-agent"), "PURPLE_MCP_TOKEN_FILE") == token_source(
        workload(r, "mcp-server"), "MCP_AUTH_TOKENS_FILE"
    )


def test_probes_stay_on_the_service_port_without_a_token() -> None:
    r = render("ci/default-values.yaml", auth__enabled=True)
    for component in ("purple-agent", "mcp-server"):
        (c,) = containers(workload(r, component))
        for kind in ("startupProbe", "readinessProbe", "livenessProbe"):
            assert c[kind]["httpGet"]["port"] == "http"
            assert c[kind]["httpGet"]["path"] in ("/healthz", "/readyz")
            assert "httpHeaders" not in c[kind]["httpGet"]


def test_checksum_annotation_is_of_the_tokens_the_secret_holds() -> None:
    r = render("ci/default-values.yaml", auth__enabled=True)
    token = secret_data(r)["mcp-token"]
    checksum = pod_annotations(workload(r, "mcp-server"))["checksum/auth"]
    # The same token as in the Secret, not a second random one: otherwise the first upgrade (which
    # reads the Secret back) would change the checksum and roll every pod for nothing.
    assert checksum == hashlib.sha256(f"mcpToken: {token}".encode()).hexdigest()
    assert len(pod_annotations(workload(r, "purple-agent"))["checksum/auth"]) == 64


def checksums(client_tokens: str, mcp_token: str) -> dict[str, str]:
    """checksum/auth of both Deployments with the given token values."""
    r = render(
        "ci/default-values.yaml",
        auth__enabled=True,
        auth__clientTokens__value=client_tokens,
        auth__mcpToken__value=mcp_token,
    )
    return {
        c: pod_annotations(workload(r, c))["checksum/auth"] for c in ("purple-agent", "mcp-server")
    }


def test_changing_a_token_rolls_exactly_the_pods_that_read_it() -> None:
    client, mcp = "client-token-0123456789", "mcp0123456789abcdef"
    base = checksums(client, mcp)
    assert base == checksums(client, mcp)
    new_client = checksums("client-token-9876543210", mcp)
    assert new_client["purple-agent"] != base["purple-agent"]
    assert new_client["mcp-server"] == base["mcp-server"]  # the MCP server never reads them
    new_mcp = checksums(client, "mcp9876543210abcdef")
    assert new_mcp["purple-agent"] != base["purple-agent"]
    assert new_mcp["mcp-server"] != base["mcp-server"]


def test_existing_secrets_are_used_by_name_and_none_is_rendered() -> None:
    r = render("ci/external-qdrant-values.yaml")
    assert r.of_kind("Secret") == []
    purple, mcp = workload(r, "purple-agent"), workload(r, "mcp-server")
    assert token_source(purple, "PURPLE_AUTH_TOKENS_FILE") == ("nfcorpus-client-tokens", "tokens")
    assert token_source(purple, "PURPLE_MCP_TOKEN_FILE") == ("nfcorpus-mcp-token", "token")
    assert token_source(mcp, "MCP_AUTH_TOKENS_FILE") == ("nfcorpus-mcp-token", "token")
    test_pod = workload(r, "test")
    # The test pod's own item of the callers' Secret, which the list there names helm-test.
    assert token_source(test_pod, "A2A_TOKEN_FILE") == ("nfcorpus-client-tokens", "helm-test-token")
    # The chart cannot see what an existing Secret holds: restarting the pods is the user's job.
    assert "checksum/auth" not in pod_annotations(purple)
    assert "checksum/auth" not in pod_annotations(mcp)


def test_one_existing_secret_and_one_generated_token() -> None:
    r = render(
        "ci/default-values.yaml",
        auth__enabled=True,
        auth__clientTokens__existingSecret="callers",
    )
    assert set(secret_data(r)) == {"mcp-token", "scrape-token"}
    purple = workload(r, "purple-agent")
    assert token_source(purple, "PURPLE_AUTH_TOKENS_FILE") == ("callers", "client-tokens")
    assert token_source(purple, "PURPLE_MCP_TOKEN_FILE") == (AUTH_SECRET, "mcp-token")
    assert "checksum/auth" in pod_annotations(purple)
    # The chart's own callers' items are in the callers' Secret, beside the list naming them.
    assert token_source(workload(r, "test"), "A2A_TOKEN_FILE") == ("callers", "helm-test-token")


def test_given_own_tokens_are_listed_after_the_callers_under_their_names(tmp_path: Path) -> None:
    def purple_checksum(helm_test: str) -> tuple[dict[str, str], str]:
        r = render(
            "ci/default-values.yaml",
            auth__enabled=True,
            auth__clientTokens__value="green:green-token-0123456789",
            auth__helmTestToken__value=helm_test,
            auth__loadGeneratorToken__value="l" * 20,
        )
        return secret_data(r), pod_annotations(workload(r, "purple-agent"))["checksum/auth"]

    data, checksum = purple_checksum("h" * 20)
    assert (data["helm-test-token"], data["load-generator-token"]) == ("h" * 20, "l" * 20)
    assert callers(tmp_path, data["client-tokens"]) == {
        "green-token-0123456789": "green",
        "h" * 20: "helm-test",
        "l" * 20: "load-generator",
    }
    # The first line stays the user's caller: the notes read a token from there.
    assert data["client-tokens"].splitlines()[0] == "green:green-token-0123456789"
    # The agent reads its list at start: a new own token rolls it.
    assert purple_checksum("k" * 20)[1] != checksum


@pytest.mark.parametrize(
    ("scenario", "component", "variable", "caller"),
    [
        ("ci/full-values.yaml", "test", "A2A_TOKEN_FILE", "helm-test"),
        ("ci/full-values.yaml", "load-generator", "GREEN_AGENT_TOKEN_FILE", "load-generator"),
        ("ci/embedded-values.yaml", "test", "A2A_TOKEN_FILE", "helm-test"),
        ("ci/embedded-values.yaml", "load-generator", "GREEN_AGENT_TOKEN_FILE", "load-generator"),
    ],
)
def test_the_chart_s_own_callers_send_a_token_of_their_own(
    tmp_path: Path, scenario: str, component: str, variable: str, caller: str
) -> None:
    r = render(scenario)
    w = r.component("Job", component)[0] if component == "load-generator" else workload(r, "test")
    key = OWN_CALLERS[caller]
    assert token_source(w, variable) == (AUTH_SECRET, key)
    # Its own item and no other caller's token (the generators also hold the collector's token).
    held = {k for name, k in secret_items(w) if name == AUTH_SECRET}
    assert held == {key}
    data = secret_data(r)
    # What the pod sends (the helm test script, or the green agent's client) is accepted by the
    # agent as that caller, not as the first one listed.
    token = sent(tmp_path, data[key], script=component == "test")
    assert callers(tmp_path, data["client-tokens"])[token] == caller
    if component == "test":
        (c,) = containers(w)
        assert "Authorization" in c["command"][2]


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        ({"auth__clientTokens__value": "too-short"}, "at least 16 characters"),
        ({"auth__mcpToken__value": "too-short"}, "mcpToken/value"),
        ({"auth__mcpToken__value": "name:token-0123456789"}, "mcpToken/value"),  # sent verbatim
        ({"auth__mcpToken__existingSecretKey": "client-tokens"}, "same key"),
        ({"auth__clientTokens__existingSecretKey": "not/a/key"}, "existingSecretKey"),
        ({"auth__helmTestToken__value": "too-short"}, "helmTestToken/value"),
        ({"auth__loadGeneratorToken__value": "name:token-0123456789"}, "loadGeneratorToken/value"),
        ({"auth__helmTestToken__existingSecretKey": "client-tokens"}, "another token"),
        ({"auth__loadGeneratorToken__existingSecretKey": "mcp-token"}, "another token"),
        (
            {"auth__clientTokens__value": "helm-test:a-token-of-my-own-0123"},
            "the chart's own callers",
        ),
    ],
)
def test_unusable_auth_values_are_refused(sets: dict[str, object], message: str) -> None:
    with pytest.raises(RenderError, match=message):
        render("ci/default-values.yaml", auth__enabled=True, **sets)
