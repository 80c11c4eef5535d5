"""store.mode=embedded: every MCP pod serves the index built into the image, no Qdrant anywhere."""

from __future__ import annotations

import pytest

from tests.k8s.rendering import RenderError, containers, env, labels, pod_spec, render

EMBEDDED = "ci/embedded-values.yaml"


def test_no_qdrant_no_indexer_and_no_qdrant_secret() -> None:
    r = render(EMBEDDED)
    assert r.of_kind("StatefulSet") == [] and r.component("Job", "indexer") == []
    assert not [d for d in r.docs if labels(d).get("app.kubernetes.io/component") == "qdrant"]
    assert [s["metadata"]["name"] for s in r.of_kind("Secret")] == ["nfcorpus-retrieval-auth"]
    # Even with every monitor on, nothing scrapes a Qdrant that is not there.
    monitored = render(EMBEDDED, serviceMonitor__enabled=True).of_kind("ServiceMonitor")
    assert sorted(labels(m)["app.kubernetes.io/component"] for m in monitored) == [
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
        RenderError, match=r"store\.mode=embedded serves the index built into the image"
    ):
        render(EMBEDDED, qdrant__external__url="http://qdrant:6333")


def test_an_unknown_store_mode_is_refused() -> None:
    with pytest.raises(RenderError, match=r"/store/mode.*must be one of 'qdrant', 'embedded'"):
        render(EMBEDDED, store__mode="sqlite")
