"""store.backend=embedded: every MCP pod serves the index built into the image, no Qdrant anywhere;
the backend names are the services' (RETRIEVAL_STORE), and store.mode, their old key, is refused."""

from __future__ import annotations

import json
import re
import subprocess
import typing
from pathlib import Path

import pytest

from services.retrieval.settings import StoreSettings
from tests.k8s.rendering import (
    CHART,
    NAMESPACE,
    RELEASE,
    RenderError,
    containers,
    env,
    labels,
    pod_spec,
    render,
    scenarios,
    tool,
)

EMBEDDED = "ci/embedded-values.yaml"


def test_no_qdrant_no_indexer_and_no_qdrant_secret() -> None:
    r = render(EMBEDDED)
    assert r.of_kind("StatefulSet") == [] and r.component("Job", "indexer") == []
    assert not [d for d in r.docs if labels(d).get("app.kubernetes.io/component") == "qdrant"]
    assert [s["metadata"]["name"] for s in r.of_kind("Secret")] == [
        "nfcorpus-retrieval-auth",
        "nfcorpus-retrieval-load-collector-token",  # the scenario runs the load test
    ]
    # Even with every monitor on, nothing scrapes a Qdrant that is not there (the load
    # collector is scraped: the scenario runs the load test).
    monitored = render(EMBEDDED, serviceMonitor__enabled=True).of_kind("ServiceMonitor")
    assert sorted(labels(m)["app.kubernetes.io/component"] for m in monitored) == [
        "load-collector",
        "mcp-server",
        "purple-agent",
    ]


def test_mcp_server_opens_the_baked_index_with_a_private_copy() -> None:
    (mcp,) = containers(render(EMBEDDED).component("Deployment", "mcp-server")[0])
    e = env(mcp)
    assert e["RETRIEVAL_STORE"] == "embedded" and e["RETRIEVAL_EDGE_PRIVATE_COPY"] == "true"
    # The image's own paths (Dockerfile ENV) hold the index, ranker and model: nothing overrides
    # them, and no Qdrant setting is passed.
    assert not [k for k in e if k.startswith("RETRIEVAL_QDRANT") or k == "RETRIEVAL_CACHE_DIR"]
    mounts = {m["mountPath"] for m in mcp["volumeMounts"]}
    assert "/var/cache/nfcorpus" not in mounts and "/tmp" in mounts
    (tmp,) = [
        v
        for v in pod_spec(render(EMBEDDED).component("Deployment", "mcp-server")[0])["volumes"]
        if v["name"] == "tmp"
    ]
    assert tmp["emptyDir"]["sizeLimit"] == "256Mi"


def test_the_default_scenario_keeps_qdrant() -> None:
    r = render("ci/default-values.yaml")
    assert len(r.component("StatefulSet", "qdrant")) == 1
    (mcp,) = containers(r.component("Deployment", "mcp-server")[0])
    assert env(mcp)["RETRIEVAL_STORE"] == "server"


def test_embedded_with_an_external_qdrant_is_refused() -> None:
    with pytest.raises(
        RenderError, match=r"store\.backend=embedded serves the index built into the image"
    ):
        render(EMBEDDED, qdrant__external__url="http://qdrant:6333")


def test_the_chart_and_the_services_name_the_store_backends_alike() -> None:
    named = set(typing.get_args(StoreSettings.model_fields["backend"].annotation))
    schema = json.loads((CHART / "values.schema.json").read_text())
    assert set(schema["properties"]["store"]["properties"]["backend"]["enum"]) == named
    for scenario in scenarios():
        (mcp,) = containers(render(scenario).component("Deployment", "mcp-server")[0])
        assert env(mcp)["RETRIEVAL_STORE"] in named, scenario


def test_an_unknown_store_backend_is_refused() -> None:
    for old in ("qdrant", "edge", "sqlite"):
        with pytest.raises(
            RenderError, match=r"/store/backend.*must be one of 'server', 'embedded'"
        ):
            render(EMBEDDED, store__backend=old)


RENAMED = (
    "store.mode was renamed store.backend (server: a Qdrant server, the release's StatefulSet or"
    " qdrant.external.url; embedded: the index built into the image)"
)


@pytest.mark.parametrize(
    ("mode", "fix"),
    [
        ("qdrant", "set store.backend=server instead of store.mode=qdrant"),
        ("embedded", "set store.backend=embedded instead of store.mode=embedded"),
        ("sqlite", "set store.backend and remove store.mode"),
    ],
)
def test_the_old_store_mode_key_is_refused_naming_store_backend(mode: str, fix: str) -> None:
    # Whatever its value, and even beside store.backend: never silently ignored.
    for scenario in ("ci/default-values.yaml", EMBEDDED):
        with pytest.raises(RenderError, match=re.escape(f"{RENAMED}: {fix}") + r"(\n|$)"):
            render(scenario, store__mode=mode)


def test_helm_install_refuses_a_values_file_with_store_mode(tmp_path: Path) -> None:
    old = tmp_path / "old-values.yaml"
    old.write_text("store:\n  mode: embedded\n")
    cmd = [str(tool("helm")), "install", RELEASE, str(CHART), "--namespace", NAMESPACE]
    cmd += ["--dry-run=client", "--values", str(old)]
    result = subprocess.run(cmd, capture_output=True, text=True, check=False)
    assert result.returncode != 0
    assert "set store.backend=embedded instead of store.mode=embedded" in result.stderr
