"""The rendered chart as the runner needs it: Deployments, Services and test pods.

Every reference (Secret, ConfigMap, named port, HPA replica count) is resolved the way the API
server and the kubelet resolve it, and every field the runner cannot honour is refused by name.

Only what a pod of this chart uses is modelled: one container per pod, HTTP probes, emptyDir,
Secret and ConfigMap volumes, env values and key references. A manifest outside that subset is an
error that names the field, never silently dropped: a run that ignored it would prove nothing.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

import yaml

from harness.chart_run.pods import References, pod_spec
from harness.chart_run.spec import Deployment, ManifestError, Release, Service

Doc = Mapping[str, Any]

# Kinds the runner does not start, and why (reported with the run).
NOT_RUN = {
    "NetworkPolicy": "not enforced: podman has no policy engine",
    "PodDisruptionBudget": "honoured by the rollout (one pod down at most), not by an eviction API",
    "HorizontalPodAutoscaler": "its minReplicas is the Deployment's replica count; no scaling",
    "ServiceAccount": "no pod calls the Kubernetes API (automountServiceAccountToken: false)",
    "Ingress": "no ingress controller",
    "HTTPRoute": "no Gateway API controller",
    "ServiceMonitor": "no Prometheus Operator",
    "PrometheusRule": "no Prometheus Operator (promtool tests the rules)",
    "ConfigMap": "mounted where a pod names it",
    "Secret": "mounted or read where a pod names it",
}


def load_release(text: str, namespace: str) -> Release:
    """Parse a ``helm template`` stream and resolve every reference of its pods.

    Raises:
        ManifestError: A kind or field the runner cannot honour, or a dangling reference.

    """
    docs = [d for d in yaml.safe_load_all(text) if d]
    by_kind: dict[str, list[Doc]] = {}
    for doc in docs:
        by_kind.setdefault(doc["kind"], []).append(doc)
    unknown = set(by_kind) - set(NOT_RUN) - {"Deployment", "Service", "Pod"}
    if unknown:
        raise ManifestError(f"kinds the runner cannot start: {', '.join(sorted(unknown))}")
    refs = References(namespace, by_kind.get("Secret", []), by_kind.get("ConfigMap", []))
    hpa_min = {
        h["spec"]["scaleTargetRef"]["name"]: int(h["spec"].get("minReplicas", 1))
        for h in by_kind.get("HorizontalPodAutoscaler", [])
    }
    deployments = tuple(_deployment(d, refs, hpa_min) for d in by_kind.get("Deployment", []))
    services = tuple(_service(s, namespace) for s in by_kind.get("Service", []))
    tests = []
    for pod in by_kind.get("Pod", []):
        hook = (pod["metadata"].get("annotations") or {}).get("helm.sh/hook")
        if hook != "test":
            raise ManifestError(f"Pod/{pod['metadata']['name']}: only helm test pods are run")
        tests.append(pod_spec(pod["metadata"], pod["spec"], refs))
    counts = Counter(k for k in by_kind if k in NOT_RUN for _ in by_kind[k])
    return Release(namespace, deployments, services, tuple(tests), dict(counts))


def _deployment(doc: Doc, refs: References, hpa_min: Mapping[str, int]) -> Deployment:
    name = doc["metadata"]["name"]
    spec = doc["spec"]
    replicas = int(spec.get("replicas", hpa_min.get(name, 1)))
    template = spec["template"]
    pod = pod_spec({**template["metadata"], "name": name}, template["spec"], refs)
    selector = spec["selector"].get("matchLabels") or {}
    if not all(pod.labels.get(k) == v for k, v in selector.items()):
        raise ManifestError(f"Deployment/{name}: its selector does not match its template")
    strategy = spec.get("strategy") or {}
    if strategy.get("type", "RollingUpdate") != "RollingUpdate":
        raise ManifestError(f"Deployment/{name}: only the RollingUpdate strategy is run")
    rolling = strategy.get("rollingUpdate") or {}
    # As the Deployment controller rounds: surge up, unavailable down.
    surge = _scaled(rolling.get("maxSurge", "25%"), replicas, math.ceil)
    unavailable = _scaled(rolling.get("maxUnavailable", "25%"), replicas, math.floor)
    if surge == 0 and unavailable == 0:
        raise ManifestError(f"Deployment/{name}: maxSurge and maxUnavailable are both 0")
    deadline = float(spec.get("progressDeadlineSeconds", 600))
    return Deployment(name, replicas, pod, surge, unavailable, deadline)


def _scaled(value: int | str, replicas: int, rounding: Any) -> int:
    if isinstance(value, str) and value.endswith("%"):
        return int(rounding(replicas * int(value[:-1]) / 100))
    return int(value)


def _service(doc: Doc, namespace: str) -> Service:
    spec = doc["spec"]
    name = doc["metadata"]["name"]
    if spec.get("type", "ClusterIP") != "ClusterIP" or spec.get("clusterIP") == "None":
        raise ManifestError(f"Service/{name}: only ClusterIP Services are run")
    ports = {int(p["port"]): p.get("targetPort", p["port"]) for p in spec["ports"]}
    return Service(name, namespace, dict(spec["selector"]), ports)
