"""The rendered chart as the runner needs it: Deployments, Jobs, Services, test pods, containers.

Every reference (Secret, ConfigMap, named port, HPA replica count) is resolved the way the API
server and the kubelet resolve it, and every field the runner cannot honour is refused by name.

Only what a pod of this chart uses is modelled: one container per pod, HTTP probes, emptyDir,
Secret and ConfigMap volumes, env values and key references. A manifest outside that subset is an
error that names the field, never silently dropped: a run that ignored it would prove nothing.
"""

from __future__ import annotations

import base64
import math
import re
from collections import Counter
from collections.abc import Mapping
from typing import Any

import yaml

from harness.chart_run.spec import (
    Deployment,
    FieldRef,
    Job,
    ManifestError,
    PodSpec,
    Probe,
    Release,
    Security,
    Service,
    Volume,
)

Doc = Mapping[str, Any]
#: A downward-API path to one annotation of the pod: ``metadata.annotations['key']``.
ANNOTATION = re.compile(r"metadata\.annotations\['([^']+)'\]")

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
    unknown = set(by_kind) - set(NOT_RUN) - {"Deployment", "Job", "Service", "Pod"}
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
    jobs = tuple(_job(j, refs) for j in by_kind.get("Job", []))
    counts = Counter(k for k in by_kind if k in NOT_RUN for _ in by_kind[k])
    return Release(namespace, deployments, services, tuple(tests), dict(counts), jobs)


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


# Job fields that change which pods count as failed or done; the runner has none of them.
_JOB_POLICIES = (
    "podFailurePolicy",
    "successPolicy",
    "backoffLimitPerIndex",
    "podReplacementPolicy",
)


def _job(doc: Doc, refs: References) -> Job:
    name = doc["metadata"]["name"]
    if (doc["metadata"].get("annotations") or {}).get("helm.sh/hook"):
        raise ManifestError(f"Job/{name}: hook Jobs are not run")
    spec = doc["spec"]
    policies = [p for p in _JOB_POLICIES if p in spec]
    if policies:
        raise ManifestError(f"Job/{name}: {', '.join(policies)} is not run")
    template = spec["template"]
    pod = pod_spec({**template["metadata"], "name": name}, template["spec"], refs)
    if pod.restart_policy != "Never":
        # OnFailure restarts the container in place; the runner never restarts one.
        raise ManifestError(f"Job/{name}: only restartPolicy Never is run")
    mode = spec.get("completionMode", "NonIndexed")
    if mode not in ("Indexed", "NonIndexed"):
        raise ManifestError(f"Job/{name}: completionMode {mode!r} is not run")
    completions = int(spec.get("completions", 1))
    deadline = spec.get("activeDeadlineSeconds")
    return Job(
        name=name,
        template=pod,
        completions=completions,
        parallelism=min(int(spec.get("parallelism", 1)), completions),
        indexed=mode == "Indexed",
        backoff_limit=int(spec.get("backoffLimit", 6)),
        active_deadline_s=None if deadline is None else float(deadline),
    )


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


class References:
    """The Secrets and ConfigMaps of the render, by name, as bytes per key."""

    def __init__(self, namespace: str, secrets: list[Doc], config_maps: list[Doc]) -> None:
        self.namespace = namespace
        self.stores: dict[str, dict[str, dict[str, bytes]]] = {"Secret": {}, "ConfigMap": {}}
        for s in secrets:
            data = {k: base64.b64decode(v) for k, v in (s.get("data") or {}).items()}
            data |= {k: v.encode() for k, v in (s.get("stringData") or {}).items()}
            self.stores["Secret"][s["metadata"]["name"]] = data
        for c in config_maps:
            data = {k: v.encode() for k, v in (c.get("data") or {}).items()}
            data |= {k: base64.b64decode(v) for k, v in (c.get("binaryData") or {}).items()}
            self.stores["ConfigMap"][c["metadata"]["name"]] = data

    def data(self, kind: str, name: str, where: str) -> dict[str, bytes]:
        """Every key of one Secret or ConfigMap; ``where`` names the referrer in an error."""
        found = self.stores[kind].get(name)
        if found is None:
            raise ManifestError(f"{where}: {kind} {name!r} is not in the render")
        return found

    def key(self, kind: str, ref: Doc, where: str) -> bytes:
        """The value of one key reference ({name, key})."""
        data = self.data(kind, ref["name"], where)
        if ref["key"] not in data:
            raise ManifestError(f"{where}: {kind} {ref['name']!r} has no key {ref['key']!r}")
        return data[ref["key"]]


def pod_spec(meta: Doc, spec: Doc, refs: References) -> PodSpec:
    """The pod of ``meta`` (name, labels) and ``spec``, its references resolved."""
    name = meta["name"]
    (container, *more) = spec["containers"]
    if more or spec.get("initContainers"):
        raise ManifestError(f"{name}: one container per pod, no init containers")
    pod_sc = spec.get("securityContext") or {}
    sc = container.get("securityContext") or {}
    uid = sc.get("runAsUser", pod_sc.get("runAsUser"))
    if uid is None or int(uid) == 0:
        # The image's user would do in a cluster; the runner wants it said, as the chart does.
        raise ManifestError(f"{name}: no non-root runAsUser")
    security = Security(
        uid=int(uid),
        gid=int(sc.get("runAsGroup", pod_sc.get("runAsGroup", uid))),
        fs_group=pod_sc.get("fsGroup"),
        read_only_root=bool(sc.get("readOnlyRootFilesystem", False)),
        no_new_privileges=sc.get("allowPrivilegeEscalation") is False,
        drop_all_capabilities="ALL" in ((sc.get("capabilities") or {}).get("drop") or []),
    )
    if sc.get("privileged"):
        raise ManifestError(f"{name}: privileged containers are not run")
    ports = {
        p.get("name", str(p["containerPort"])): int(p["containerPort"])
        for p in container.get("ports") or []
    }
    limits = (container.get("resources") or {}).get("limits") or {}
    pre_stop = ((container.get("lifecycle") or {}).get("preStop") or {}).get("exec")
    return PodSpec(
        name=name,
        labels=dict(meta.get("labels") or {}),
        image=container["image"],
        command=tuple(container.get("command") or ()),
        args=tuple(container.get("args") or ()),
        env=tuple(_env(e, refs, name) for e in container.get("env") or ()),
        ports=ports,
        startup=_probe(container.get("startupProbe"), ports, name),
        readiness=_probe(container.get("readinessProbe"), ports, name),
        liveness=_probe(container.get("livenessProbe"), ports, name),
        cpu_limit=limits.get("cpu"),
        memory_limit=limits.get("memory"),
        security=security,
        volumes=_volumes(
            container.get("volumeMounts") or [], spec.get("volumes") or [], refs, name
        ),
        pre_stop=tuple(pre_stop["command"]) if pre_stop else None,
        grace_s=float(spec.get("terminationGracePeriodSeconds", 30)),
        restart_policy=spec.get("restartPolicy", "Always"),
    )


def _env(entry: Doc, refs: References, where: str) -> tuple[str, str | FieldRef]:
    name = entry["name"]
    if "valueFrom" not in entry:
        value = str(entry.get("value", ""))
        if "$(" in value:
            # The kubelet expands references to earlier variables in a value; the runner only
            # in a command and its args.
            raise ManifestError(f"{where} env {name}: $(...) references in env values are not run")
        return name, value
    source = entry["valueFrom"]
    for kind, key in (("Secret", "secretKeyRef"), ("ConfigMap", "configMapKeyRef")):
        if key in source:
            return name, refs.key(kind, source[key], f"{where} env {name}").decode()
    path = str((source.get("fieldRef") or {}).get("fieldPath", ""))
    if path in ("metadata.name", "metadata.namespace") or ANNOTATION.fullmatch(path):
        return name, FieldRef(path)
    raise ManifestError(f"{where} env {name}: valueFrom {sorted(source)} is not supported")


def _probe(doc: Doc | None, ports: Mapping[str, int], where: str) -> Probe | None:
    if doc is None:
        return None
    if "httpGet" not in doc:
        raise ManifestError(f"{where}: only HTTP probes are run")
    get = doc["httpGet"]
    port = get["port"]
    if isinstance(port, str):
        if port not in ports:
            raise ManifestError(f"{where}: probe port {port!r} names no container port")
        port = ports[port]
    return Probe(
        path=get.get("path", "/"),
        port=int(port),
        period_s=float(doc.get("periodSeconds", 10)),
        timeout_s=float(doc.get("timeoutSeconds", 1)),
        failure_threshold=int(doc.get("failureThreshold", 3)),
        success_threshold=int(doc.get("successThreshold", 1)),
        initial_delay_s=float(doc.get("initialDelaySeconds", 0)),
    )


def _volumes(
    mounts: list[Doc], volumes: list[Doc], refs: References, where: str
) -> tuple[Volume, ...]:
    sources = {v["name"]: v for v in volumes}
    out = []
    for mount in mounts:
        name = mount["name"]
        source = sources.get(name)
        if source is None:
            raise ManifestError(f"{where}: volumeMount {name!r} names no volume")
        read_only = bool(mount.get("readOnly", False))
        path = mount["mountPath"]
        if "emptyDir" in source:
            limit = (source["emptyDir"] or {}).get("sizeLimit")
            out.append(Volume(name, path, read_only, size_limit=limit))
            continue
        for kind, key, ref in (
            ("Secret", "secret", "secretName"),
            ("ConfigMap", "configMap", "name"),
        ):
            if key in source:
                projected = source[key]
                data = refs.data(kind, projected[ref], f"{where} volume {name}")
                files = _project(data, projected.get("items"), f"{where} volume {name}")
                mode = int(projected.get("defaultMode", 0o644))
                # Secret and ConfigMap volumes are read-only whatever the mount says.
                out.append(Volume(name, path, True, files=files, mode=mode))
                break
        else:
            raise ManifestError(f"{where}: volume {name!r} is not an emptyDir, Secret or ConfigMap")
    return tuple(out)


def _project(data: Mapping[str, bytes], items: list[Doc] | None, where: str) -> dict[str, bytes]:
    if not items:
        return dict(data)
    files = {}
    for item in items:
        if item["key"] not in data:
            raise ManifestError(f"{where}: no key {item['key']!r}")
        files[item["path"]] = data[item["key"]]
    return files
