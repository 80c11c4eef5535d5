"""Bearer-token authentication (auth.*): Secrets, token files, checksums and the helm test pod."""

from __future__ import annotations

import base64
import hashlib
from pathlib import Path

import pytest

from tests.k8s.rendering import (
    Doc,
    Rendered,
    RenderError,
    containers,
    env,
    load_query_script,
    pod_spec,
    render,
    token_source,
)

AUTH_SECRET = "nfcorpus-retrieval-auth"
TOKEN_ENV = ("PURPLE_AUTH_TOKENS_FILE", "PURPLE_MCP_TOKEN_FILE", "MCP_AUTH_TOKENS_FILE")
# What each component reads: env variable -> the auth.* part whose token file it names.
PURPLE_FILES = {"PURPLE_AUTH_TOKENS_FILE": "clientTokens", "PURPLE_MCP_TOKEN_FILE": "mcpToken"}
MCP_FILES = {"MCP_AUTH_TOKENS_FILE": "mcpToken"}
DEFAULT_KEYS = {"clientTokens": "client-tokens", "mcpToken": "mcp-token"}


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


def test_generated_tokens_reach_both_workloads_as_files() -> None:
    r = render("ci/default-values.yaml", auth__enabled=True)
    data = secret_data(r)
    assert set(data) == {"client-tokens", "mcp-token", "scrape-token"}  # scrape: test_scrape_token
    for token in data.values():
        assert len(token) >= 16 and token.isalnum()  # what the services accept
    assert data["client-tokens"] != data["mcp-token"]
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
    assert token_source(test_pod, "A2A_TOKEN_FILE") == ("nfcorpus-client-tokens", "tokens")
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


def test_helm_test_pod_sends_the_first_client_token(tmp_path: Path) -> None:
    r = render("ci/full-values.yaml")
    pod = workload(r, "test")
    assert token_source(pod, "A2A_TOKEN_FILE") == (AUTH_SECRET, "client-tokens")
    # The file the pod sees, read by the script the pod runs.
    tokens = tmp_path / "tokens"
    tokens.write_text(secret_data(r)["client-tokens"])
    assert load_query_script().read_token(str(tokens)) == "ci-example-token-green-0123456789"
    (c,) = containers(pod)
    assert "Authorization" in c["command"][2]


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        ({"auth__clientTokens__value": "too-short"}, "at least 16 characters"),
        ({"auth__mcpToken__value": "too-short"}, "mcpToken/value"),
        ({"auth__mcpToken__value": "name:token-0123456789"}, "mcpToken/value"),  # sent verbatim
        ({"auth__mcpToken__existingSecretKey": "client-tokens"}, "same key"),
        ({"auth__clientTokens__existingSecretKey": "not/a/key"}, "existingSecretKey"),
    ],
)
def test_unusable_auth_values_are_refused(sets: dict[str, object], message: str) -> None:
    with pytest.raises(RenderError, match=message):
        render("ci/default-values.yaml", auth__enabled=True, **sets)
