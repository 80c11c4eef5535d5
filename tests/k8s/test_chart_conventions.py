"""What the best-kept charts carry, in ours: Artifact Hub metadata matching what the chart runs,
PDBs that never block a drain on a broken pod, a Gateway API route, and a full scenario that
renders every optional object."""

from __future__ import annotations

import pytest
import yaml

from tests.k8s.rendering import CHART, RenderError, labels, render


def _chart() -> dict[str, object]:
    chart: dict[str, object] = yaml.safe_load((CHART / "Chart.yaml").read_text())
    return chart


def test_chart_metadata_names_what_it_runs() -> None:
    chart = _chart()
    assert str(chart["home"]).startswith("https://") and chart["sources"] and chart["maintainers"]
    annotations = chart["annotations"]
    assert isinstance(annotations, dict)
    assert annotations["artifacthub.io/license"] == "Apache-2.0"
    listed = {i["image"] for i in yaml.safe_load(annotations["artifacthub.io/images"])}
    # The images the default render runs, registry-qualified, are the ones listed.
    r = render("ci/default-values.yaml")
    running = {
        c["image"]
        for kind in ("Deployment", "StatefulSet", "Job")
        for w in r.of_kind(kind)
        for c in w["spec"]["template"]["spec"]["containers"]
    }
    assert running == listed
    assert all(image.count("/") >= 2 for image in listed)  # registry/owner/name
    assert {c["kind"] for c in yaml.safe_load(annotations["artifacthub.io/changes"])} <= {
        "added", "changed", "deprecated", "removed", "fixed", "security",
    }  # fmt: skip


def test_web_pdbs_let_broken_pods_be_evicted_but_qdrant_waits() -> None:
    policies = {
        labels(p)["app.kubernetes.io/component"]: p["spec"].get("unhealthyPodEvictionPolicy")
        for p in render("ci/default-values.yaml").of_kind("PodDisruptionBudget")
    }
    # A crash-looping web pod never blocks a node drain; a Qdrant peer that is not Ready may be
    # recovering its shards, so it is evicted only within the budget.
    assert policies == {
        "purple-agent": "AlwaysAllow",
        "mcp-server": "AlwaysAllow",
        "qdrant": "IfHealthyBudget",
    }


def test_http_route_sends_the_published_paths_to_the_purple_service() -> None:
    r = render("ci/full-values.yaml")
    (route,) = r.of_kind("HTTPRoute")
    assert route["apiVersion"] == "gateway.networking.k8s.io/v1"
    spec = route["spec"]
    assert spec["parentRefs"] == [
        {"name": "public", "namespace": "gateways", "sectionName": "https"}
    ]
    assert spec["hostnames"] == ["agent.example.com"]
    (rule,) = spec["rules"]
    # Exact paths only: the card and JSON-RPC (tests/k8s/test_published_routes.py).
    assert {m["path"]["type"] for m in rule["matches"]} == {"Exact"}
    service = r.api_service("purple-agent")
    assert rule["backendRefs"] == [{"name": service["metadata"]["name"], "port": 9009}]
    assert render("ci/default-values.yaml").of_kind("HTTPRoute") == []


def test_http_route_without_a_gateway_is_refused() -> None:
    with pytest.raises(RenderError, match=r"needs purpleAgent\.httpRoute\.parentRefs"):
        render("ci/default-values.yaml", purpleAgent__httpRoute__enabled=True)


def test_the_full_scenario_renders_every_optional_object() -> None:
    kinds = {d["kind"] for d in render("ci/full-values.yaml").docs}
    optional = {
        "Ingress",
        "HTTPRoute",
        "ServiceMonitor",
        "PrometheusRule",
        "ConfigMap",  # the Grafana dashboard (and Qdrant's configuration)
        "HorizontalPodAutoscaler",
        "PodDisruptionBudget",
        "NetworkPolicy",
        "Secret",
        "Pod",  # the helm test pod
    }
    assert optional <= kinds, optional - kinds
