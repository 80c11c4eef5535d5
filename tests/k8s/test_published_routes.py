"""The purple agent published outside the cluster (purpleAgent.ingress, purpleAgent.httpRoute):
refused without authentication or without TLS unless the value named for exactly that says so,
and then only what an A2A caller needs: the agent card and the JSON-RPC endpoint."""

from __future__ import annotations

import pytest

from services.common.a2a import A2A_RPC_PATH, CARD_PATHS
from tests.k8s.rendering import Doc, Rendered, RenderError, containers, env, notes, render

ROUTES = {"ingress": "Ingress", "httpRoute": "HTTPRoute"}
# What a published route forwards: the card and JSON-RPC, nothing the agent serves besides.
PUBLISHED = {A2A_RPC_PATH, *CARD_PATHS}
# What the agent serves that only the cluster may reach (/readyz names the internal MCP URL).
INTERNAL = ("/metrics", "/readyz", "/healthz", "/metrics/", "/readyz?x=1", "/.well-known/other")
# The values that make each route safe to publish: authentication and TLS.
SAFE: dict[str, dict[str, object]] = {
    "ingress": {"auth__enabled": True, "purpleAgent__ingress__tlsSecretName": "agent-tls"},
    "httpRoute": {"auth__enabled": True, "purpleAgent__httpRoute__tlsAtGateway": True},
}


def publish(route: str, **sets: object) -> Rendered:
    """The default scenario with one route on (and a Gateway for the HTTPRoute)."""
    values: dict[str, object] = {f"purpleAgent__{route}__enabled": True}
    if route == "httpRoute":
        values["purpleAgent__httpRoute__parentRefs[0]__name"] = "public"
    return render("ci/default-values.yaml", **{**values, **sets})


def forwarded(route: Doc) -> list[tuple[str, str]]:
    """(match type, path) of every path the route sends to a backend."""
    if route["kind"] == "Ingress":
        return [
            (p["pathType"], p["path"])
            for rule in route["spec"]["rules"]
            for p in rule["http"]["paths"]
        ]
    return [
        (m["path"]["type"], m["path"]["value"])
        for rule in route["spec"]["rules"]
        for m in rule.get("matches") or [{"path": {"type": "PathPrefix", "value": "/"}}]
    ]


def reaches(route: Doc, request_path: str) -> bool:
    """Whether a request for ``request_path`` goes through the route (Ingress/Gateway API rules)."""
    path = request_path.split("?", 1)[0]
    for kind, value in forwarded(route):
        if kind == "Exact" and path == value:
            return True
        if kind in ("Prefix", "PathPrefix", "ImplementationSpecific"):
            prefix = value.rstrip("/")
            if path == prefix or path.startswith(prefix + "/"):
                return True
    return False


@pytest.mark.parametrize("route", ROUTES)
def test_a_route_without_authentication_is_refused_naming_the_fix(route: str) -> None:
    sets = {k: v for k, v in SAFE[route].items() if k != "auth__enabled"}
    with pytest.raises(RenderError) as refused:
        publish(route, **sets)
    message = str(refused.value)
    assert "auth.enabled=true" in message
    assert f"purpleAgent.{route}.allowUnauthenticated=true" in message


@pytest.mark.parametrize("route", ROUTES)
def test_an_open_agent_is_published_only_when_the_named_value_says_so(route: str) -> None:
    sets = {k: v for k, v in SAFE[route].items() if k != "auth__enabled"}
    r = publish(route, **sets, **{f"purpleAgent__{route}__allowUnauthenticated": True})
    assert len(r.of_kind(ROUTES[route])) == 1
    (purple,) = containers(r.component("Deployment", "purple-agent")[0])
    assert "PURPLE_AUTH_TOKENS_FILE" not in env(purple)  # open, as asked
    text = notes(
        "auth.enabled=false",
        f"purpleAgent.{route}.enabled=true",
        f"purpleAgent.{route}.allowUnauthenticated=true",
        "purpleAgent.ingress.allowPlaintext=true",
        "purpleAgent.httpRoute.allowPlaintext=true",
        "purpleAgent.httpRoute.parentRefs[0].name=public",
    )
    assert f"WARNING: purpleAgent.{route}.allowUnauthenticated=true" in text


@pytest.mark.parametrize(
    ("route", "fixes"),
    [
        (
            "ingress",
            ("purpleAgent.ingress.tlsSecretName", "purpleAgent.ingress.allowPlaintext=true"),
        ),
        (
            "httpRoute",
            (
                "purpleAgent.httpRoute.tlsAtGateway=true",
                "purpleAgent.httpRoute.allowPlaintext=true",
            ),
        ),
    ],
)
def test_a_route_without_tls_is_refused_naming_the_fix(route: str, fixes: tuple[str, ...]) -> None:
    with pytest.raises(RenderError) as refused:
        publish(route, auth__enabled=True)
    for fix in fixes:
        assert fix in str(refused.value)
    plain = publish(route, auth__enabled=True, **{f"purpleAgent__{route}__allowPlaintext": True})
    (published,) = plain.of_kind(ROUTES[route])
    assert "tls" not in published["spec"]


def test_the_ingress_serves_tls_for_its_host() -> None:
    (ingress,) = publish("ingress", **SAFE["ingress"]).of_kind("Ingress")
    assert ingress["spec"]["tls"] == [
        {"hosts": ["nfcorpus-agent.example.com"], "secretName": "agent-tls"}
    ]


@pytest.mark.parametrize("route", ROUTES)
def test_a_route_publishes_the_card_and_json_rpc_only(route: str) -> None:
    for r in (publish(route, **SAFE[route]), render("ci/full-values.yaml")):
        (published,) = r.of_kind(ROUTES[route])
        assert sorted(forwarded(published)) == sorted(("Exact", p) for p in PUBLISHED)
        for path in PUBLISHED:
            assert reaches(published, path), path
        for path in INTERNAL:
            assert not reaches(published, path), path


def test_a_route_to_the_whole_agent_would_be_caught() -> None:
    # The check above holds only if `reaches` reads a prefix rule as the controllers do.
    everything = {"kind": "HTTPRoute", "spec": {"rules": [{"matches": []}]}}
    assert all(reaches(everything, p) for p in INTERNAL)


def test_the_card_url_through_the_ingress_is_a_published_path() -> None:
    r = publish("ingress", **SAFE["ingress"])
    (purple,) = containers(r.component("Deployment", "purple-agent")[0])
    url = env(purple)["PURPLE_CARD_URL"]
    assert url == "https://nfcorpus-agent.example.com/"
    (ingress,) = r.of_kind("Ingress")
    assert reaches(ingress, "/" + url.split("/", 3)[3])
