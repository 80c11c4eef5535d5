"""Workloads of every ci scenario: probes, hardening, scaling, selectors, ports, wiring."""

from __future__ import annotations

from tests.k8s.rendering import (
    Rendered,
    containers,
    env,
    labels,
    matches,
    pod_labels,
    pod_spec,
    render,
    scenarios,
    store_backend,
)

SCENARIOS = scenarios()
# Container port each long-running component listens on, by port name.
PORTS = {
    "purple-agent": {"http": 9009, "metrics": 9090},
    "mcp-server": {"http": 8000, "metrics": 9090},
    "qdrant": {"http": 6333, "grpc": 6334, "p2p": 6335},
    "load-collector": {"http": 8080, "metrics": 9090},
}
PROBE_PATHS = {
    "purple-agent": ("/healthz", "/readyz", "/healthz"),
    "mcp-server": ("/healthz", "/readyz", "/healthz"),
    "qdrant": ("/livez", "/readyz", "/livez"),
    # Nothing to wait for: the collector is ready once it answers.
    "load-collector": ("/healthz", "/healthz", "/healthz"),
}


def test_every_scenario_renders_the_core_components() -> None:
    assert SCENARIOS == [
        "ci/cluster-values.yaml",
        "ci/default-values.yaml",
        "ci/embedded-values.yaml",
        "ci/external-qdrant-values.yaml",
        "ci/full-values.yaml",
        "ci/parallel-indexer-values.yaml",
    ]
    for scenario in SCENARIOS:
        r = render(scenario)
        for component in ("purple-agent", "mcp-server"):
            assert len(r.component("Deployment", component)) == 1, (scenario, component)
            # The API's Service and the metrics port's.
            assert len(r.component("Service", component)) == 2, (scenario, component)
        # The embedded index is built into the image: no indexer fills a store.
        indexers = 0 if store_backend(scenario) == "embedded" else 1
        assert len(r.component("Job", "indexer")) == indexers, scenario


def test_long_running_containers_have_all_three_probes(rendered: Rendered) -> None:
    long_running = rendered.of_kind("Deployment") + rendered.of_kind("StatefulSet")
    assert long_running
    for workload in long_running:
        component = labels(workload)["app.kubernetes.io/component"]
        for c in containers(workload, init=False):
            kinds = ("startupProbe", "readinessProbe", "livenessProbe")
            missing = [k for k in kinds if not c.get(k)]
            assert not missing, f"{workload['metadata']['name']}/{c['name']} misses {missing}"
            probes = [c[k] for k in kinds]
            assert tuple(p["httpGet"]["path"] for p in probes) == PROBE_PATHS[component]
            port_names = {p["name"] for p in c["ports"]}
            assert {p["httpGet"]["port"] for p in probes} <= port_names


def test_every_container_is_hardened_and_bounded(rendered: Rendered) -> None:
    for workload in rendered.workloads():
        spec = pod_spec(workload)
        name = workload["metadata"]["name"]
        assert spec["securityContext"]["runAsNonRoot"] is True, name
        assert spec["securityContext"]["seccompProfile"]["type"] == "RuntimeDefault", name
        assert spec["automountServiceAccountToken"] is False, name
        for c in containers(workload):
            sc = c["securityContext"]
            assert sc["readOnlyRootFilesystem"] is True, (name, c["name"])
            assert sc["allowPrivilegeEscalation"] is False, (name, c["name"])
            assert sc["capabilities"]["drop"] == ["ALL"], (name, c["name"])
            assert "add" not in sc["capabilities"], (name, c["name"])
            for kind in ("requests", "limits"):
                assert {"cpu", "memory"} <= set(c["resources"][kind]), (name, c["name"], kind)


def test_read_only_containers_get_writable_volumes_where_they_write(rendered: Rendered) -> None:
    for workload in rendered.workloads():
        spec = pod_spec(workload)
        volumes = {v["name"]: v for v in spec.get("volumes", [])}
        for c in containers(workload, init=False):
            mounts = {m["mountPath"]: m["name"] for m in c.get("volumeMounts", [])}
            if workload["kind"] == "Pod":  # the helm test pod only runs a stdlib script
                continue
            assert "/tmp" in mounts, (workload["metadata"]["name"], c["name"])
            assert "emptyDir" in volumes[mounts["/tmp"]]
            cache = env(c).get("RETRIEVAL_CACHE_DIR")
            if cache is not None:
                assert any(cache.startswith(path) for path in mounts), (c["name"], cache)


def test_replicas_are_left_to_the_hpa_when_it_is_on(rendered: Rendered) -> None:
    hpas = {
        h["spec"]["scaleTargetRef"]["name"]: h for h in rendered.of_kind("HorizontalPodAutoscaler")
    }
    for deployment in rendered.of_kind("Deployment"):
        name = deployment["metadata"]["name"]
        if name in hpas:
            assert "replicas" not in deployment["spec"], name
            spec = hpas[name]["spec"]
            assert spec["scaleTargetRef"]["kind"] == "Deployment"
            assert 1 <= spec["minReplicas"] <= spec["maxReplicas"]
            assert spec["metrics"], name
        else:
            assert deployment["spec"]["replicas"] >= 1, name
    assert set(hpas) <= {d["metadata"]["name"] for d in rendered.of_kind("Deployment")}


def test_hpa_off_renders_replicas_and_no_hpa() -> None:
    r = render("ci/external-qdrant-values.yaml")
    assert r.of_kind("HorizontalPodAutoscaler") == []
    assert r.component("Deployment", "purple-agent")[0]["spec"]["replicas"] == 3
    assert r.component("Deployment", "mcp-server")[0]["spec"]["replicas"] == 2


def test_custom_metric_hpa() -> None:
    (hpa,) = render("ci/full-values.yaml").component("HorizontalPodAutoscaler", "purple-agent")
    by_type = {m["type"]: m for m in hpa["spec"]["metrics"]}
    assert by_type["Resource"]["resource"]["name"] == "cpu"
    assert by_type["Pods"]["pods"]["metric"]["name"] == "purple_requests_in_flight"
    assert by_type["Pods"]["pods"]["target"] == {"type": "AverageValue", "averageValue": "4"}


def test_selectors_match_pod_labels(rendered: Rendered) -> None:
    workloads = [w for w in rendered.workloads() if w["kind"] != "Pod"]
    for w in workloads:
        if w["kind"] == "Job":
            continue  # Jobs select their pods by generated uid
        selector = w["spec"]["selector"]["matchLabels"]
        assert matches(selector, pod_labels(w)), w["metadata"]["name"]
        for constraint in pod_spec(w).get("topologySpreadConstraints", []):
            assert constraint["labelSelector"]["matchLabels"] == selector
    for kind in ("Service", "PodDisruptionBudget"):
        for obj in rendered.of_kind(kind):
            selector = obj["spec"]["selector"]
            selector = selector.get("matchLabels", selector)
            selected = [w for w in workloads if matches(selector, pod_labels(w))]
            assert len(selected) == 1, f"{kind}/{obj['metadata']['name']} selects {len(selected)}"


def test_services_target_the_right_container_ports(rendered: Rendered) -> None:
    workloads = [w for w in rendered.workloads() if w["kind"] in ("Deployment", "StatefulSet")]
    for service in rendered.of_kind("Service"):
        component = labels(service)["app.kubernetes.io/component"]
        (workload,) = [w for w in workloads if matches(service["spec"]["selector"], pod_labels(w))]
        declared = {
            p["name"]: p["containerPort"] for c in containers(workload) for p in c.get("ports", [])
        }
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in declared, (service["metadata"]["name"], port)
            assert declared[port["targetPort"]] == PORTS[component][port["targetPort"]]


def test_headless_qdrant_service_serves_the_statefulset() -> None:
    r = render("ci/cluster-values.yaml")
    (statefulset,) = r.of_kind("StatefulSet")
    headless = r.get("Service", statefulset["spec"]["serviceName"])
    assert headless["spec"]["clusterIP"] == "None"
    assert headless["spec"]["publishNotReadyAddresses"] is True
    assert {p["port"] for p in headless["spec"]["ports"]} == {6333, 6334, 6335}
