"""values.yaml documentation, the dashboard's metrics, and the plain manifests under k8s/."""

from __future__ import annotations

import json
import re

import pytest
import yaml

from services.mcp_server.app import SERVICE as MCP
from services.purple_agent.app import SERVICE as PURPLE
from tests.k8s.rendering import CHART, ROOT, containers, env, kustomize, labels, pod_spec

KEY = re.compile(r"^(\s*)([A-Za-z0-9_.\-/]+):")


def test_every_key_of_values_yaml_has_a_comment() -> None:
    """Keys of mappings need a comment above (or inline); entries of list values are data."""
    lines = (CHART / "values.yaml").read_text().splitlines()
    undocumented = []
    list_indent: int | None = None  # indent of the "- " item we are inside, if any
    for number, line in enumerate(lines):
        stripped = line.lstrip()
        indent = len(line) - len(stripped)
        if not stripped or stripped.startswith("#"):
            continue
        if list_indent is not None and indent <= list_indent and not stripped.startswith("- "):
            list_indent = None
        if stripped.startswith("- "):
            list_indent = indent if list_indent is None else min(list_indent, indent)
            continue
        match = KEY.match(line)
        if not match or list_indent is not None:
            continue
        above = lines[number - 1].strip() if number else ""
        if not above.startswith("#") and "#" not in line:
            undocumented.append(f"values.yaml:{number + 1}: {match.group(2)}")
    assert undocumented == []


def test_schema_covers_every_top_level_value() -> None:
    values = yaml.safe_load((CHART / "values.yaml").read_text())
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert schema["additionalProperties"] is False
    assert set(values) <= set(schema["properties"])


def test_dashboard_queries_only_metrics_the_services_export() -> None:
    dashboard = json.loads((CHART / "dashboards" / "nfcorpus-retrieval.json").read_text())
    exprs = [t["expr"] for p in dashboard["panels"] for t in p.get("targets", [])]
    assert exprs
    used = {
        re.sub(r"_(bucket|count|sum)$", "", m)
        for e in exprs
        for m in re.findall(r"(?<![:\w])(?:purple|mcp|loadtest)_[a-z_]+", e)  # not recording rules
    }
    source = "\n".join(p.read_text() for p in (ROOT / "services").rglob("*.py"))
    # The service frame names each server's request metrics after its metric prefix.
    framed = {
        f"{s.metric_prefix}_http_{name}"
        for s in (MCP, PURPLE)
        for name in ("request_duration_seconds", "auth_failures_total")
    }
    missing = sorted(m for m in used if f'"{m}"' not in source and m not in framed)
    assert missing == [], "dashboard uses metrics no service declares"
    assert dashboard["uid"] == "nfcorpus-retrieval"
    assert {v["name"] for v in dashboard["templating"]["list"]} == {"datasource", "namespace"}


def test_base_is_the_chart_without_helm_only_parts() -> None:
    docs = [
        d
        for d in yaml.safe_load_all((ROOT / "k8s" / "base" / "nfcorpus-retrieval.yaml").read_text())
        if d
    ]
    assert docs
    assert {d["metadata"]["namespace"] for d in docs} == {"nfcorpus-retrieval"}
    assert not [d for d in docs if d["kind"] in ("Pod", "Secret")]
    assert not [
        d
        for d in docs
        if any(k.startswith("helm.sh/") for k in d["metadata"].get("annotations", {}))
    ]


@pytest.mark.parametrize("overlay", ["dev", "production"])
def test_overlays_build_into_restricted_namespace(overlay: str) -> None:
    r = kustomize(overlay)
    (namespace,) = r.of_kind("Namespace")
    assert namespace["metadata"]["labels"]["pod-security.kubernetes.io/enforce"] == "restricted"
    for doc in r.docs:
        if doc["kind"] != "Namespace":
            assert doc["metadata"]["namespace"] == "nfcorpus-retrieval", doc["metadata"]["name"]
            assert labels(doc)["app.kubernetes.io/managed-by"] == "kustomize"
    assert len(r.of_kind("StatefulSet")) == 1
    assert len(r.of_kind("Job")) == 1


def test_dev_overlay_creates_the_secret_the_pods_read() -> None:
    r = kustomize("dev")
    (secret,) = r.of_kind("Secret")
    (mcp,) = containers(r.component("Deployment", "mcp-server")[0])
    ref = env(mcp)["RETRIEVAL_QDRANT_API_KEY"]["secretKeyRef"]
    assert ref == {"name": secret["metadata"]["name"], "key": "read-only-api-key"}
    assert set(secret["data"]) == {"api-key", "read-only-api-key"}
    assert {h["spec"]["minReplicas"] for h in r.of_kind("HorizontalPodAutoscaler")} == {1}


def test_production_overlay_pins_the_registry_images() -> None:
    r = kustomize("production")
    images = {
        c["image"] for w in r.workloads() for c in containers(w) if "qdrant" not in c["image"]
    }
    assert images == {
        "registry.example.com/nfcorpus-retrieval:0.1.0",
        "registry.example.com/nfcorpus-retrieval-indexer:0.1.0",
    }
    assert kustomize("production").of_kind("Secret") == []
    (sts,) = r.of_kind("StatefulSet")
    assert pod_spec(sts)["containers"][0]["resources"]["limits"]["memory"] == "8Gi"
