"""Render the chart (or a kustomize overlay) with the project's own helm/kubectl and query the YAML."""

from __future__ import annotations

import functools
import importlib.util
import subprocess
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath
from types import ModuleType
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
CHART = ROOT / "helm" / "nfcorpus-retrieval"
TOOLS = ROOT / ".tools" / "bin"
RELEASE = "nfcorpus-retrieval"
NAMESPACE = "nfcorpus-retrieval"
WORKLOAD_KINDS = ("Deployment", "StatefulSet", "Job", "Pod")

Doc = dict[str, Any]


class ToolMissing(RuntimeError):
    """helm or kubectl is not installed under .tools/."""


def tool(name: str) -> Path:
    """Path of a tool installed by `make tools-k8s`; a clear error when it is missing."""
    path = TOOLS / name
    if not path.is_file():
        raise ToolMissing(
            f"{path} is missing: run 'make tools-k8s' (tests/k8s need the real {name})"
        )
    return path


@dataclass(frozen=True)
class Rendered:
    """The documents of one render, with lookups the tests share."""

    docs: tuple[Doc, ...]

    def of_kind(self, kind: str) -> list[Doc]:
        return [d for d in self.docs if d["kind"] == kind]

    def get(self, kind: str, name: str) -> Doc:
        found = [d for d in self.of_kind(kind) if d["metadata"]["name"] == name]
        assert len(found) == 1, f"expected one {kind}/{name}, found {len(found)}"
        return found[0]

    def component(self, kind: str, component: str) -> list[Doc]:
        return [
            d
            for d in self.of_kind(kind)
            if labels(d).get("app.kubernetes.io/component") == component
        ]

    def api_service(self, component: str) -> Doc:
        """The Service of a component's API: not its metrics port's, not Qdrant's headless one."""
        (service,) = [
            s
            for s in self.component("Service", component)
            if "clusterIP" not in s["spec"]
            and "metrics" not in {p["name"] for p in s["spec"]["ports"]}
        ]
        return service

    def workloads(self) -> list[Doc]:
        return [d for d in self.docs if d["kind"] in WORKLOAD_KINDS]


def labels(doc: Mapping[str, Any]) -> dict[str, str]:
    return dict(doc["metadata"].get("labels") or {})


def pod_spec(workload: Doc) -> Doc:
    spec: Doc = workload["spec"] if workload["kind"] == "Pod" else _template(workload)["spec"]
    return spec


def pod_labels(workload: Doc) -> dict[str, str]:
    if workload["kind"] == "Pod":
        return labels(workload)
    return dict(_template(workload)["metadata"].get("labels") or {})


def _template(workload: Doc) -> Doc:
    spec = workload["spec"]
    template: Doc = (
        spec["template"] if "template" in spec else spec["jobTemplate"]["spec"]["template"]
    )
    return template


def containers(workload: Doc, init: bool = True) -> Iterator[Doc]:
    spec = pod_spec(workload)
    yield from spec.get("containers", [])
    if init:
        yield from spec.get("initContainers", [])


def env(container: Doc) -> dict[str, Any]:
    """Container env by name: the literal value, or the valueFrom mapping."""
    return {e["name"]: e.get("value", e.get("valueFrom")) for e in container.get("env", [])}


def matches(selector: Mapping[str, str], pod: Mapping[str, str]) -> bool:
    return all(pod.get(k) == v for k, v in selector.items())


def _parse(text: str) -> Rendered:
    return Rendered(tuple(d for d in yaml.safe_load_all(text) if d))


class RenderError(RuntimeError):
    """helm template refused the values."""


def _helm(command: str, chart: Path, *args: str) -> str:
    """What ``helm <command>`` of the release from a chart folder prints; RenderError if refused."""
    cmd = [str(tool("helm")), command, RELEASE, str(chart), "--namespace", NAMESPACE, *args]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise RenderError(result.stderr.strip())
    return result.stdout


def template(chart: Path, *args: str) -> Rendered:
    """`helm template` of a chart folder (the project's, or a copy of it) with helm's arguments."""
    return _parse(_helm("template", chart, *args))


@functools.cache
def _render(values_files: tuple[str, ...], sets: tuple[tuple[str, str], ...]) -> Rendered:
    args: list[str] = []
    for f in values_files:
        args += ["--values", str(CHART / f)]
    for key, value in sets:
        args += ["--set", f"{key}={value}"]
    return template(CHART, *args)


def render(*values_files: str, **sets: object) -> Rendered:
    """`helm template` with chart-relative values files and --set pairs (dots as `__`)."""
    pairs = tuple(
        sorted(
            (k.replace("__", "."), str(v).lower() if isinstance(v, bool) else str(v))
            for k, v in sets.items()
        )
    )
    return _render(tuple(values_files), pairs)


def install_notes(chart: Path, *args: str) -> str:
    """The NOTES `helm install` of a chart folder prints (a client-side dry run), with helm's
    arguments."""
    return _helm("install", chart, "--dry-run=client", *args).split("\nNOTES:\n", 1)[1]


@functools.cache
def notes(*sets: str) -> str:
    """The NOTES `helm install` prints (a client-side dry run), with --set pairs `key=value`."""
    return install_notes(CHART, *(f"--set={s}" for s in sets))


def secret_items(workload: Doc) -> set[tuple[str, str]]:
    """(Secret name, key) of every Secret item the pod's volumes project."""
    return {
        (v["secret"]["secretName"], item["key"])
        for v in pod_spec(workload).get("volumes") or []
        if "secret" in v
        for item in v["secret"].get("items") or [{"key": "*"}]  # no items: every key
    }


@functools.cache
def kustomize(overlay: str) -> Rendered:
    """`kubectl kustomize k8s/overlays/<overlay>`."""
    cmd = [str(tool("kubectl")), "kustomize", str(ROOT / "k8s" / "overlays" / overlay)]
    return _parse(subprocess.run(cmd, capture_output=True, text=True, check=True).stdout)


def scenarios() -> list[str]:
    """The chart's ci/*-values.yaml files, relative to the chart."""
    return sorted(f"ci/{p.name}" for p in (CHART / "ci").glob("*-values.yaml"))


def values_examples() -> list[str]:
    """The chart's values examples, examples/values-*.yaml, relative to the chart.

    examples/ also holds values of other charts (prometheus-adapter's), which this chart does not
    take: only ``values-*.yaml`` are this chart's.
    """
    return sorted(f"examples/{p.name}" for p in (CHART / "examples").glob("values-*.yaml"))


def store_backend(scenario: str) -> str:
    """The scenario's store.backend (the chart's default, server, when it sets none)."""
    values = yaml.safe_load((CHART / scenario).read_text()) or {}
    return str((values.get("store") or {}).get("backend", "server"))


def load_query_script() -> ModuleType:
    """The chart's helm-test script (files/a2a_query.py), imported as a module."""
    spec = importlib.util.spec_from_file_location("a2a_query", CHART / "files" / "a2a_query.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def token_source(w: Doc, variable: str) -> tuple[str, str]:
    """(Secret name, key) behind the file an env variable names: the mount, then its volume."""
    (c,) = containers(w)
    path = PurePosixPath(env(c)[variable])
    (mount,) = [m for m in c["volumeMounts"] if PurePosixPath(m["mountPath"]) == path.parent]
    assert mount["readOnly"] is True
    (volume,) = [v for v in pod_spec(w)["volumes"] if v["name"] == mount["name"]]
    secret = volume["secret"]
    (item,) = secret["items"]  # only the token's key is projected into the pod
    assert item["path"] == path.name
    return secret["secretName"], item["key"]
