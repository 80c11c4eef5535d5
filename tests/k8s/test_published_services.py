"""A Service of type NodePort or LoadBalancer publishes its pods outside the cluster as a route
does, over plain HTTP and every path (issue 52, input 6): refused unless the value named for it
says so, the purple agent then with authentication as a published route, the MCP server (with
/stats/reset) and Qdrant only with both authentication and the named value. The metrics port
stays on a ClusterIP Service of its own whatever the API's Service is."""

from __future__ import annotations

import pytest

from tests.k8s.rendering import Rendered, RenderError, notes, render, scenarios

PUBLISHING = ("NodePort", "LoadBalancer")


def published(component: str, kind: str, **sets: object) -> Rendered:
    """The default scenario with ``component``'s Service of type ``kind``."""
    return render("ci/default-values.yaml", **{f"{component}__service__type": kind, **sets})


def refusal(component: str, kind: str, **sets: object) -> str:
    with pytest.raises(RenderError) as refused:
        published(component, kind, **sets)
    return str(refused.value)


@pytest.mark.parametrize("kind", PUBLISHING)
@pytest.mark.parametrize("component", ["purpleAgent", "mcpServer", "qdrant"])
def test_a_published_service_is_refused_by_default(component: str, kind: str) -> None:
    message = refusal(component, kind)
    assert f"{component}.service.type={kind}" in message
    assert f"{component}.service.allowPublish=true" in message


@pytest.mark.parametrize("kind", PUBLISHING)
def test_the_purple_agent_needs_authentication_as_a_route_does(kind: str) -> None:
    message = refusal("purpleAgent", kind, purpleAgent__service__allowPublish=True)
    assert "auth.enabled=true" in message
    assert "purpleAgent.service.allowUnauthenticated=true" in message
    for sets in (
        {"auth__enabled": True},
        {"purpleAgent__service__allowUnauthenticated": True},  # open, as asked by name
    ):
        r = published("purpleAgent", kind, purpleAgent__service__allowPublish=True, **sets)
        assert r.api_service("purple-agent")["spec"]["type"] == kind


@pytest.mark.parametrize("kind", PUBLISHING)
def test_the_mcp_server_needs_both_authentication_and_the_named_value(kind: str) -> None:
    assert "auth.enabled=true" in refusal("mcpServer", kind, mcpServer__service__allowPublish=True)
    refusal("mcpServer", kind, auth__enabled=True)
    r = published("mcpServer", kind, auth__enabled=True, mcpServer__service__allowPublish=True)
    assert r.api_service("mcp-server")["spec"]["type"] == kind


@pytest.mark.parametrize("kind", PUBLISHING)
def test_qdrant_needs_both_its_api_key_and_the_named_value(kind: str) -> None:
    open_qdrant = {"qdrant__apiKey__enabled": False, "qdrant__service__allowPublish": True}
    assert "qdrant.apiKey.enabled=true" in refusal("qdrant", kind, **open_qdrant)
    r = published("qdrant", kind, qdrant__service__allowPublish=True)
    assert r.api_service("qdrant")["spec"]["type"] == kind
    # An external Qdrant has no Service of the release: nothing to publish, nothing refused.
    render("ci/external-qdrant-values.yaml", qdrant__service__type=kind)


def test_a_published_service_never_carries_the_metrics_port() -> None:
    r = published(
        "purpleAgent", "LoadBalancer", auth__enabled=True, purpleAgent__service__allowPublish=True
    )
    api = r.api_service("purple-agent")
    assert [p["name"] for p in api["spec"]["ports"]] == ["http"]
    (metrics,) = [s for s in r.component("Service", "purple-agent") if s is not api]
    assert metrics["spec"]["type"] == "ClusterIP"
    assert [p["name"] for p in metrics["spec"]["ports"]] == ["metrics"]


def test_the_install_notes_warn_of_a_published_service() -> None:
    text = notes(
        "auth.enabled=true",
        "mcpServer.service.type=NodePort",
        "mcpServer.service.allowPublish=true",
    )
    assert "WARNING: mcpServer.service.allowPublish=true" in text


@pytest.mark.parametrize("scenario", scenarios())
def test_every_service_of_every_scenario_stays_in_the_cluster(scenario: str) -> None:
    # The load collector's Service (full and embedded scenarios) has no type value: ClusterIP.
    for service in render(scenario).of_kind("Service"):
        assert service["spec"].get("type", "ClusterIP") == "ClusterIP", service["metadata"]
