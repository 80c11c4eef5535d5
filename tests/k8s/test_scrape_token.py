"""The scrape token (auth.scrapeToken): a Secret item of its own, mounted into the servers that
serve /metrics (the load collector's too, with loadTest) and sent by their ServiceMonitors; with
auth off, none of it."""

from __future__ import annotations

import base64
import hashlib

import pytest

from tests.k8s.rendering import (
    Doc,
    Rendered,
    RenderError,
    containers,
    env,
    pod_spec,
    render,
    token_source,
)

AUTH_SECRET = "nfcorpus-retrieval-auth"
KEY = "scrape-token"
# The servers whose /metrics Prometheus scrapes, and the variable each reads the token from.
SCRAPED = {"purple-agent": "PURPLE_METRICS_TOKEN_FILE", "mcp-server": "MCP_METRICS_TOKEN_FILE"}
# With loadTest: the collector, whose /metrics holds the load test's client side.
COLLECTOR, COLLECTOR_VARIABLE = "load-collector", "GREEN_METRICS_TOKEN_FILE"


def _tokens(r: Rendered) -> dict[str, str]:
    secret = r.get("Secret", AUTH_SECRET)
    return {k: base64.b64decode(v).decode() for k, v in secret["data"].items()}


def _deployment(r: Rendered, component: str) -> Doc:
    (deployment,) = r.component("Deployment", component)
    return deployment


def _monitor_auth(r: Rendered, component: str) -> Doc | None:
    (monitor,) = r.component("ServiceMonitor", component)
    (endpoint,) = monitor["spec"]["endpoints"]
    assert endpoint["path"] == "/metrics"
    auth: Doc | None = endpoint.get("authorization")
    return auth


def _mounts_scrape_token(workload: Doc) -> bool:
    return any(
        name.endswith("_METRICS_TOKEN_FILE") for c in containers(workload) for name in env(c)
    ) or any(v.get("name") == KEY for v in pod_spec(workload).get("volumes") or [])


def test_a_generated_scrape_token_of_its_own_reaches_the_scraped_servers() -> None:
    r = render("ci/default-values.yaml", auth__enabled=True, serviceMonitor__enabled=True)
    tokens = _tokens(r)
    scrape = tokens[KEY]
    assert len(scrape) >= 16 and scrape.isalnum()  # what the services accept
    # One token per purpose: never a caller's token, never the MCP token.
    assert scrape not in {v for k, v in tokens.items() if k != KEY}
    for component, variable in SCRAPED.items():
        deployment = _deployment(r, component)
        assert token_source(deployment, variable) == (AUTH_SECRET, KEY), component
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        # Read at start only: the pods roll when the token changes.
        expected = hashlib.sha256(f"scrapeToken: {scrape}".encode()).hexdigest()
        assert annotations["checksum/scrape-token"] == expected, component
        # The ServiceMonitor sends the same Secret item as a bearer token.
        assert _monitor_auth(r, component) == {
            "type": "Bearer",
            "credentials": {"name": AUTH_SECRET, "key": KEY},
        }, component


def test_only_the_scraped_servers_mount_it() -> None:
    r = render("ci/embedded-values.yaml", serviceMonitor__enabled=True)
    assert KEY in _tokens(r)
    for workload in r.workloads():
        name = workload["metadata"]["name"]
        scraped = any(name.endswith(component) for component in [*SCRAPED, COLLECTOR])
        assert _mounts_scrape_token(workload) == scraped, name


def test_the_load_collector_s_scrape_sends_the_token_it_mounts() -> None:
    r = render(
        "ci/default-values.yaml",
        auth__enabled=True,
        serviceMonitor__enabled=True,
        loadTest__enabled=True,
    )
    collector = _deployment(r, COLLECTOR)
    assert token_source(collector, COLLECTOR_VARIABLE) == (AUTH_SECRET, KEY)
    assert _monitor_auth(r, COLLECTOR) == {
        "type": "Bearer",
        "credentials": {"name": AUTH_SECRET, "key": KEY},
    }
    # Its reporters' token is another Secret's: the scrape token is not theirs.
    assert token_source(collector, "GREEN_LOAD_COLLECTOR_TOKEN_FILE")[0] != AUTH_SECRET
    # Auth off: nothing mounted, nothing sent; its /metrics is then open, as its /report is.
    off = render("ci/default-values.yaml", serviceMonitor__enabled=True, loadTest__enabled=True)
    assert not _mounts_scrape_token(_deployment(off, COLLECTOR))
    assert _monitor_auth(off, COLLECTOR) is None
    existing = render(
        "ci/default-values.yaml",
        auth__enabled=True,
        auth__scrapeToken__existingSecret="ops-scrape",
        auth__scrapeToken__existingSecretKey="token",
        serviceMonitor__enabled=True,
        loadTest__enabled=True,
    )
    source = token_source(_deployment(existing, COLLECTOR), COLLECTOR_VARIABLE)
    assert source == ("ops-scrape", "token")
    assert (_monitor_auth(existing, COLLECTOR) or {})["credentials"] == {
        "name": "ops-scrape",
        "key": "token",
    }
    # Without the load test, no collector and nothing of it scraped.
    plain = render("ci/default-values.yaml", auth__enabled=True, serviceMonitor__enabled=True)
    assert plain.component("ServiceMonitor", COLLECTOR) == []


def test_with_auth_off_there_is_no_scrape_token_and_the_scrape_sends_none() -> None:
    r = render("ci/default-values.yaml", serviceMonitor__enabled=True)
    assert not [s for s in r.of_kind("Secret") if s["metadata"]["name"] == AUTH_SECRET]
    for component in SCRAPED:
        assert not _mounts_scrape_token(_deployment(r, component)), component
        assert _monitor_auth(r, component) is None, component
        annotations = _deployment(r, component)["spec"]["template"]["metadata"]
        assert "checksum/scrape-token" not in (annotations.get("annotations") or {})


def test_a_given_value_and_an_existing_secret() -> None:
    given = render(
        "ci/default-values.yaml",
        auth__enabled=True,
        auth__scrapeToken__value="s" * 24,
        serviceMonitor__enabled=True,
    )
    assert _tokens(given)[KEY] == "s" * 24
    existing = render(
        "ci/default-values.yaml",
        auth__enabled=True,
        auth__scrapeToken__existingSecret="ops-scrape",
        auth__scrapeToken__existingSecretKey="token",
        serviceMonitor__enabled=True,
    )
    assert KEY not in _tokens(existing)  # the chart's Secret holds the other tokens only
    for component, variable in SCRAPED.items():
        deployment = _deployment(existing, component)
        assert token_source(deployment, variable) == ("ops-scrape", "token"), component
        # The chart cannot see an existing Secret's content: no checksum of it.
        annotations = deployment["spec"]["template"]["metadata"]["annotations"]
        assert "checksum/scrape-token" not in annotations
        credentials = (_monitor_auth(existing, component) or {})["credentials"]
        assert credentials == {"name": "ops-scrape", "key": "token"}


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        ({"auth__scrapeToken__value": "too-short"}, "scrapeToken/value"),
        ({"auth__scrapeToken__value": "name:token-0123456789"}, "scrapeToken/value"),
        ({"auth__scrapeToken__existingSecretKey": "mcp-token"}, "scrapeToken.existingSecretKey"),
    ],
)
def test_unusable_scrape_token_values_are_refused(sets: dict[str, object], message: str) -> None:
    with pytest.raises(RenderError, match=message):
        render("ci/default-values.yaml", auth__enabled=True, **sets)
