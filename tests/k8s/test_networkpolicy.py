"""The NetworkPolicies allow exactly clients -> purple agent -> MCP server -> Qdrant (and DNS).

A small evaluator applies the rendered policies the way Kubernetes does (a connection needs the
source's egress and the destination's ingress to allow it; a pod no policy selects is open) to a
model of the cluster: every pod of the release, strangers in the same namespace, DNS, a monitoring
namespace, an external Qdrant and the internet.
"""

from __future__ import annotations

import ipaddress
import itertools
from dataclasses import dataclass, field
from typing import Any

import pytest

from tests.k8s.rendering import (
    NAMESPACE,
    Rendered,
    RenderError,
    containers,
    env,
    labels,
    matches,
    pod_labels,
    render,
)

Edge = tuple[str, str, int]


@dataclass(frozen=True)
class Pod:
    name: str
    namespace: str
    ip: str
    labels: dict[str, str] = field(default_factory=dict)

    def namespace_labels(self) -> dict[str, str]:
        return {"kubernetes.io/metadata.name": self.namespace}


def _peer_matches(peer: dict[str, Any], policy_namespace: str, pod: Pod) -> bool:
    if "ipBlock" in peer:
        block = peer["ipBlock"]
        ip = ipaddress.ip_address(pod.ip)
        excluded = any(ip in ipaddress.ip_network(e) for e in block.get("except", []))
        return ip in ipaddress.ip_network(block["cidr"]) and not excluded
    if "namespaceSelector" in peer:
        if not matches(peer["namespaceSelector"].get("matchLabels", {}), pod.namespace_labels()):
            return False
    elif pod.namespace != policy_namespace:
        return False
    return matches(peer.get("podSelector", {}).get("matchLabels", {}), pod.labels)


def _rule_allows(
    rule: dict[str, Any], key: str, policy_namespace: str, peer: Pod, port: int
) -> bool:
    ports = rule.get("ports")
    if ports and not any(p["port"] == port for p in ports):
        return False
    peers = rule.get(key)
    return not peers or any(_peer_matches(p, policy_namespace, peer) for p in peers)


class Cluster:
    def __init__(self, rendered: Rendered) -> None:
        self.policies = rendered.of_kind("NetworkPolicy")

    def _direction_allows(self, pod: Pod, kind: str, peer: Pod, port: int) -> bool:
        key, rules_key = ("to", "egress") if kind == "Egress" else ("from", "ingress")
        selecting = [
            p
            for p in self.policies
            if p["metadata"]["namespace"] == pod.namespace
            and kind in p["spec"]["policyTypes"]
            and matches(p["spec"]["podSelector"].get("matchLabels", {}), pod.labels)
        ]
        if not selecting:
            return True
        return any(
            _rule_allows(rule, key, p["metadata"]["namespace"], peer, port)
            for p in selecting
            for rule in p["spec"].get(rules_key) or []
        )

    def allows(self, src: Pod, dst: Pod, port: int) -> bool:
        return self._direction_allows(src, "Egress", dst, port) and self._direction_allows(
            dst, "Ingress", src, port
        )


def release_pods(rendered: Rendered) -> list[Pod]:
    pods = []
    for i, workload in enumerate(rendered.workloads()):
        component = pod_labels(workload)["app.kubernetes.io/component"]
        pods.append(Pod(component, NAMESPACE, f"10.244.0.{10 + i}", pod_labels(workload)))
    return pods


STRANGER = Pod("stranger", NAMESPACE, "10.244.1.1", {"app": "something-else"})
EVAL_POD = Pod("eval", NAMESPACE, "10.244.1.2", {"app.kubernetes.io/component": "green-agent"})
KUBE_DNS = Pod("kube-dns", "kube-system", "10.244.2.1", {"k8s-app": "kube-dns"})
PROMETHEUS = Pod("prometheus", "monitoring", "10.244.3.1", {"app": "prometheus"})
INGRESS = Pod("ingress", "ingress-nginx", "10.244.4.1", {"app": "ingress-nginx"})
VECTOR_DB = Pod("external-qdrant", "vector-db", "10.244.5.1", {"app": "qdrant"})
INTERNET = Pod("internet", "", "151.101.1.1")
PORTS = (9009, 8000, 6333, 6334, 6335, 443, 4317, 8080, 9090)


def in_release_edges(rendered: Rendered) -> set[Edge]:
    cluster = Cluster(rendered)
    pods = [*release_pods(rendered), STRANGER, EVAL_POD]
    return {
        (src.name, dst.name, port)
        for src, dst in itertools.product(pods, repeat=2)
        for port in PORTS
        if cluster.allows(src, dst, port)
    }


CORE = {
    ("green-agent", "purple-agent", 9009),
    ("eval", "purple-agent", 9009),
    ("purple-agent", "mcp-server", 8000),
}
# The load test's generators reach the purple agent and hand their reports to the collector.
LOAD_TEST = {("load-generator", "purple-agent", 9009), ("load-generator", "load-collector", 8080)}
TO_QDRANT = {(src, "qdrant", port) for src in ("mcp-server", "indexer") for port in (6333, 6334)}
# The stranger pod is selected by no policy: it may call out (its own egress is open), but every
# pod of the release refuses it, so it only "reaches" itself and the eval pod (also unselected).
UNSELECTED = {(a, b, p) for a in ("stranger", "eval") for b in ("stranger", "eval") for p in PORTS}


@pytest.mark.parametrize(
    ("scenario", "expected"),
    [
        ("ci/default-values.yaml", CORE | TO_QDRANT),
        ("ci/cluster-values.yaml", CORE | TO_QDRANT | {("qdrant", "qdrant", 6335)}),
        ("ci/full-values.yaml", CORE | TO_QDRANT | {("qdrant", "qdrant", 6335)} | LOAD_TEST),
        ("ci/external-qdrant-values.yaml", CORE),
        # The index is in every MCP pod: nothing reaches a store.
        ("ci/embedded-values.yaml", CORE | LOAD_TEST),
        # The indexer's slices reach nothing in the release: only the finishing step writes.
        ("ci/parallel-indexer-values.yaml", CORE | TO_QDRANT),
    ],
)
def test_only_the_intended_paths_inside_the_namespace(scenario: str, expected: set[Edge]) -> None:
    assert in_release_edges(render(scenario)) - UNSELECTED == expected


def test_every_pod_of_the_release_is_selected_for_both_directions() -> None:
    for scenario in (
        "ci/default-values.yaml",
        "ci/full-values.yaml",
        "ci/external-qdrant-values.yaml",
        "ci/parallel-indexer-values.yaml",
    ):
        rendered = render(scenario)
        policies = rendered.of_kind("NetworkPolicy")
        for pod in release_pods(rendered):
            types = {
                t
                for p in policies
                if matches(p["spec"]["podSelector"]["matchLabels"], pod.labels)
                for t in p["spec"]["policyTypes"]
            }
            assert types == {"Ingress", "Egress"}, (scenario, pod.name)


def test_dns_is_open_to_every_pod_of_the_release() -> None:
    rendered = render("ci/default-values.yaml")
    cluster = Cluster(rendered)
    for pod in release_pods(rendered):
        assert cluster.allows(pod, KUBE_DNS, 53), pod.name


def test_only_the_indexer_reaches_the_internet_and_only_when_allowed() -> None:
    rendered = render("ci/default-values.yaml")
    cluster = Cluster(rendered)
    reach = {p.name for p in release_pods(rendered) if cluster.allows(p, INTERNET, 443)}
    assert reach == {"indexer"}
    blocked = render("ci/external-qdrant-values.yaml")
    assert not any(Cluster(blocked).allows(p, INTERNET, 443) for p in release_pods(blocked))


def test_the_indexer_s_slices_reach_dns_and_the_download_only_never_the_store() -> None:
    # Downloading allowed: the slices may fetch the dataset as the indexer's Job may.
    rendered = render("ci/parallel-indexer-values.yaml", indexer__data__allowDownload=True)
    cluster = Cluster(rendered)
    (slice_pod,) = [p for p in release_pods(rendered) if p.name == "indexer-slices"]
    reached = {
        (dst.name, port)
        for dst in [*release_pods(rendered), KUBE_DNS, VECTOR_DB, INTERNET]
        for port in (*PORTS, 53)
        if dst is not slice_pod and cluster.allows(slice_pod, dst, port)
    }
    assert reached == {("kube-dns", 53), ("internet", 443)}
    external = render(
        "ci/parallel-indexer-values.yaml",
        qdrant__external__url="http://qdrant.vector-db:6333",
        qdrant__apiKey__existingSecret="qdrant-credentials",
    )
    pods = {p.name: p for p in release_pods(external)}
    assert Cluster(external).allows(pods["indexer"], VECTOR_DB, 6333)
    assert not Cluster(external).allows(pods["indexer-slices"], VECTOR_DB, 6333)


def test_external_qdrant_is_reached_by_mcp_server_and_indexer_only() -> None:
    rendered = render("ci/external-qdrant-values.yaml")
    cluster = Cluster(rendered)
    reach = {p.name for p in release_pods(rendered) if cluster.allows(p, VECTOR_DB, 6333)}
    assert reach == {"mcp-server", "indexer"}


def test_monitoring_and_ingress_peers_get_exactly_their_ports() -> None:
    full = render("ci/full-values.yaml")
    cluster = Cluster(full)
    pods = {p.name: p for p in release_pods(full)}
    scraped = {
        (name, port)
        for name, pod in pods.items()
        for port in PORTS
        if cluster.allows(PROMETHEUS, pod, port)
    }
    # The metrics port of our servers, never their API ports (/mcp, /stats/reset, A2A, the
    # collector's POST /reports); Qdrant's API port because the scenario says so by name
    # (qdrant.scrapeApiPort).
    assert scraped == {
        ("purple-agent", 9090),
        ("mcp-server", 9090),
        ("load-collector", 9090),
        ("qdrant", 6333),
    }
    entered = {
        (name, port)
        for name, pod in pods.items()
        for port in PORTS
        if cluster.allows(INGRESS, pod, port)
    }
    assert entered == {("purple-agent", 9009)}
    default = render("ci/default-values.yaml")
    assert not any(
        Cluster(default).allows(PROMETHEUS, p, port)
        for p in release_pods(default)
        for port in PORTS
    )


def test_otlp_egress_only_when_an_endpoint_is_set() -> None:
    collector = Pod("otel-collector", "observability", "10.244.6.1", {"app": "otel"})
    full = render("ci/full-values.yaml")
    assert Cluster(full).allows(
        next(p for p in release_pods(full) if p.name == "mcp-server"), collector, 4317
    )
    default = render("ci/default-values.yaml")
    assert not Cluster(default).allows(
        next(p for p in release_pods(default) if p.name == "mcp-server"), collector, 4317
    )


def test_policies_can_be_switched_off() -> None:
    assert (
        render("ci/default-values.yaml", networkPolicy__enabled=False).of_kind("NetworkPolicy")
        == []
    )
    assert all(
        labels(p)["app.kubernetes.io/instance"]
        for p in render("ci/default-values.yaml").of_kind("NetworkPolicy")
    )


def test_prometheus_reaches_the_metrics_port_alone_never_the_api_ports() -> None:
    # Issue 52, input 7: metricsFrom opened the whole API port (/mcp, /stats/reset) where
    # /metrics alone is needed. The servers serve /metrics on SERVER_METRICS_PORT and answer it
    # nowhere else (services/common/metrics_port.py): that port, and it alone, is opened.
    full = render("ci/full-values.yaml")
    cluster = Cluster(full)
    for component in ("purple-agent", "mcp-server", "load-collector"):
        (deployment,) = full.component("Deployment", component)
        (container,) = containers(deployment)
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert env(container)["SERVER_METRICS_PORT"] == str(ports["metrics"])
        (pod,) = [p for p in release_pods(full) if p.name == component]
        assert cluster.allows(PROMETHEUS, pod, ports["metrics"])
        assert not cluster.allows(PROMETHEUS, pod, ports["http"])


def test_qdrant_s_api_port_is_opened_to_prometheus_only_when_a_value_says_so() -> None:
    # Qdrant serves /metrics on its API port, beside its whole REST API: without
    # qdrant.scrapeApiPort no rule lets Prometheus reach it, and no ServiceMonitor scrapes it.
    closed = render("ci/full-values.yaml", qdrant__scrapeApiPort=False)
    cluster = Cluster(closed)
    scraped = {
        (pod.name, port)
        for pod in release_pods(closed)
        for port in PORTS
        if cluster.allows(PROMETHEUS, pod, port)
    }
    assert scraped == {("purple-agent", 9090), ("mcp-server", 9090), ("load-collector", 9090)}
    monitored = {labels(m)["app.kubernetes.io/component"] for m in closed.of_kind("ServiceMonitor")}
    assert monitored == {"purple-agent", "mcp-server", "load-collector"}


def test_qdrant_s_api_port_is_never_opened_without_its_api_key() -> None:
    with pytest.raises(RenderError) as refused:
        render("ci/full-values.yaml", qdrant__apiKey__enabled=False)
    assert "qdrant.apiKey.enabled=true" in str(refused.value)
    assert "qdrant.scrapeApiPort" in str(refused.value)
