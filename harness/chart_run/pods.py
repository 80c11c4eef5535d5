"""A pod template of the render as a :class:`~harness.chart_run.spec.PodSpec`.

Its one container, with every Secret, ConfigMap and named-port reference resolved as the kubelet
resolves it.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from typing import Any

from harness.chart_run.spec import FieldRef, ManifestError, PodSpec, Probe, Security, Volume

Doc = Mapping[str, Any]


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
        return name, str(entry.get("value", ""))
    source = entry["valueFrom"]
    for kind, key in (("Secret", "secretKeyRef"), ("ConfigMap", "configMapKeyRef")):
        if key in source:
            return name, refs.key(kind, source[key], f"{where} env {name}").decode()
    path = (source.get("fieldRef") or {}).get("fieldPath")
    if path in ("metadata.name", "metadata.namespace"):
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
