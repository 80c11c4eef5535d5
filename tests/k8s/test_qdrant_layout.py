"""How the indexer lays out a version's collections on Qdrant: the chart's values become the
indexer's RETRIEVAL_QDRANT_* variables, which the store's settings accept as the chart means
them; the MCP server, which only reads, gets none. And the example for 1M documents on three
peers (examples/values-1m-documents-3-nodes.yaml) is the 1M example with Qdrant on three peers."""

from __future__ import annotations

from typing import Any

import pytest
import yaml

from services.retrieval.settings import RetrievalSettings, ServerLayout
from tests.k8s.rendering import CHART, Rendered, RenderError, containers, env, render

EXAMPLE = "examples/values-1m-documents-3-nodes.yaml"
ONE_PEER = "examples/values-1m-documents.yaml"
#: The variables the chart gives the indexer from qdrant.* (and refuses in retrieval.settings).
LAYOUT = {
    "RETRIEVAL_QDRANT_SHARDS",
    "RETRIEVAL_QDRANT_REPLICATION_FACTOR",
    "RETRIEVAL_QDRANT_WRITE_CONSISTENCY_FACTOR",
    "RETRIEVAL_QDRANT_NODES",
    "RETRIEVAL_QDRANT_GRPC_PORT",
    "RETRIEVAL_QDRANT_ON_DISK_VECTORS",
    "RETRIEVAL_QDRANT_ON_DISK_PAYLOAD",
    "RETRIEVAL_QUANTIZATION_ALWAYS_RAM",
}


def _indexer(r: Rendered) -> dict[str, Any]:
    (job,) = r.component("Job", "indexer")
    (indexer,) = containers(job, init=False)
    return env(indexer)


def _settings(variables: dict[str, Any], monkeypatch: pytest.MonkeyPatch) -> RetrievalSettings:
    """The settings the indexer builds from its rendered environment (plain values only)."""
    for name, value in variables.items():
        if name.startswith("RETRIEVAL_") and isinstance(value, str):
            monkeypatch.setenv(name, value)
    return RetrievalSettings()


def test_the_indexer_lays_out_one_peer_as_qdrant_would_and_writes_over_grpc(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    r = render("ci/default-values.yaml")
    found = _indexer(r)
    assert {k: found[k] for k in LAYOUT} == {
        "RETRIEVAL_QDRANT_SHARDS": "1",
        "RETRIEVAL_QDRANT_REPLICATION_FACTOR": "1",
        "RETRIEVAL_QDRANT_WRITE_CONSISTENCY_FACTOR": "1",
        "RETRIEVAL_QDRANT_NODES": "1",
        "RETRIEVAL_QDRANT_GRPC_PORT": "6334",
        "RETRIEVAL_QDRANT_ON_DISK_VECTORS": "false",
        "RETRIEVAL_QDRANT_ON_DISK_PAYLOAD": "true",
        "RETRIEVAL_QUANTIZATION_ALWAYS_RAM": "false",
    }
    store = _settings(found, monkeypatch).store
    assert store.qdrant_grpc_port == 6334
    assert store.server_layout == ServerLayout(1, 1, 1, 1, False, True, False)
    # The client Service carries the gRPC port, inside the cluster.
    (service,) = [s for s in r.component("Service", "qdrant") if "clusterIP" not in s["spec"]]
    assert service["spec"]["type"] == "ClusterIP"
    assert 6334 in {p["port"] for p in service["spec"]["ports"]}
    # The MCP server only reads, over REST: nothing of the layout, no gRPC.
    (mcp,) = containers(r.component("Deployment", "mcp-server")[0], init=False)
    assert LAYOUT.isdisjoint(env(mcp))


def test_a_cluster_shards_the_documents_over_its_peers(monkeypatch: pytest.MonkeyPatch) -> None:
    found = _indexer(render("ci/cluster-values.yaml"))
    layout = _settings(found, monkeypatch).store.server_layout
    # Two shards per peer on three peers, two copies each; small collections on every peer.
    assert (layout.shards, layout.replication_factor, layout.nodes) == (6, 2, 3)
    assert layout.write_consistency_factor == 1


def test_rest_stays_unless_a_value_asks_for_grpc() -> None:
    assert "RETRIEVAL_QDRANT_GRPC_PORT" not in _indexer(
        render("ci/default-values.yaml", qdrant__grpc=False)
    )
    # An external Qdrant: its own defaults for shards and copies, REST unless its port is named.
    external = _indexer(render("ci/external-qdrant-values.yaml"))
    assert not {k for k in LAYOUT if "_QDRANT_" in k and "ON_DISK" not in k} & set(external)
    r = render("ci/external-qdrant-values.yaml", qdrant__external__grpcPort=7334)
    assert _indexer(r)["RETRIEVAL_QDRANT_GRPC_PORT"] == "7334"
    (policy,) = r.component("NetworkPolicy", "indexer")
    ports = {p["port"] for rule in policy["spec"]["egress"] for p in rule.get("ports", [])}
    assert {6333, 7334} <= ports


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        ({"qdrant__cluster__replicationFactor": 2}, r"replicationFactor \(2\) cannot exceed"),
        (
            {
                "qdrant__replicaCount": 3,
                "qdrant__cluster__enabled": True,
                "qdrant__cluster__replicationFactor": 2,
                "qdrant__cluster__writeConsistencyFactor": 3,
            },
            r"writeConsistencyFactor \(3\) cannot exceed qdrant.cluster.replicationFactor \(2\)",
        ),
        ({"retrieval__settings__QDRANT_SHARDS": 4}, "the chart sets RETRIEVAL_QDRANT_SHARDS"),
        ({"retrieval__settings__QDRANT_ON_DISK_VECTORS": True}, "set it there"),
    ],
)
def test_a_layout_no_peer_set_can_hold_is_refused(sets: dict[str, object], message: str) -> None:
    with pytest.raises(RenderError, match=message):
        render("ci/default-values.yaml", **sets)


def test_an_external_clusters_layout_goes_in_the_retrieval_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    r = render("ci/external-qdrant-values.yaml", retrieval__settings__QDRANT_NODES=3)
    assert _settings(_indexer(r), monkeypatch).store.server_layout.nodes == 3


def test_the_three_peer_example_is_the_1m_one_with_qdrant_on_three_peers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    example = yaml.safe_load((CHART / EXAMPLE).read_text())
    one_peer = yaml.safe_load((CHART / ONE_PEER).read_text())
    assert {k: v for k, v in example.items() if k != "qdrant"} == {
        k: v for k, v in one_peer.items() if k != "qdrant"
    }
    r = render(EXAMPLE)
    (sts,) = r.component("StatefulSet", "qdrant")
    q = example["qdrant"]
    assert sts["spec"]["replicas"] == q["replicaCount"] == 3
    (server,) = containers(sts)
    assert server["resources"] == q["resources"]
    (claim,) = sts["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == q["persistence"]["size"]
    store = _settings(_indexer(r), monkeypatch).store
    assert store.server_layout == ServerLayout(
        shards=6,
        replication_factor=2,
        write_consistency_factor=2,
        nodes=3,
        on_disk_vectors=True,
        on_disk_payload=True,
        quantized_in_ram=True,
    )
    assert store.qdrant_grpc_port == 6334
    # Each peer holds less than the one peer of the 1M example: two thirds of the collection.
    single = yaml.safe_load((CHART / ONE_PEER).read_text())["qdrant"]
    assert _gi(q["persistence"]["size"]) < _gi(single["persistence"]["size"])
    assert _gi(q["resources"]["limits"]["memory"]) < _gi(single["resources"]["limits"]["memory"])


def _gi(quantity: str) -> int:
    assert quantity.endswith("Gi"), quantity
    return int(quantity.removesuffix("Gi"))
