"""Qdrant: the StatefulSet, cluster mode, the API key, and the external-Qdrant mode."""

from __future__ import annotations

import pytest
import yaml

from tests.k8s.rendering import RenderError, containers, env, labels, pod_spec, render


def qdrant_config(scenario: str, **sets: object) -> dict[str, object]:
    (cm,) = render(scenario, **sets).component("ConfigMap", "qdrant")
    config: dict[str, object] = yaml.safe_load(cm["data"]["production.yaml"])
    return config


def test_single_node_statefulset() -> None:
    r = render("ci/default-values.yaml")
    (sts,) = r.of_kind("StatefulSet")
    assert sts["spec"]["replicas"] == 1
    (qdrant,) = containers(sts)
    assert qdrant["image"] == "docker.io/qdrant/qdrant:v1.19.1"
    assert "command" not in qdrant  # the image's own entrypoint
    (claim,) = sts["spec"]["volumeClaimTemplates"]
    assert claim["spec"]["resources"]["requests"]["storage"] == "5Gi"
    mounts = {m["mountPath"]: m["name"] for m in qdrant["volumeMounts"]}
    assert mounts["/qdrant/storage"] == claim["metadata"]["name"]
    config = qdrant_config("ci/default-values.yaml")
    assert config["cluster"] == {"enabled": False, "p2p": {"port": 6335}}
    assert config["telemetry_disabled"] is True


def test_cluster_mode_bootstraps_through_peer_zero() -> None:
    r = render("ci/cluster-values.yaml")
    (sts,) = r.of_kind("StatefulSet")
    assert sts["spec"]["replicas"] == 3
    (qdrant,) = containers(sts)
    assert qdrant["command"] == ["/bin/sh", "/qdrant/config/start-peer.sh"]
    (cm,) = r.component("ConfigMap", "qdrant")
    script = cm["data"]["start-peer.sh"]
    headless = sts["spec"]["serviceName"]
    assert f'--bootstrap "http://{sts["metadata"]["name"]}-0.{headless}:6335"' in script
    config = qdrant_config("ci/cluster-values.yaml")
    assert config["cluster"] == {"enabled": True, "p2p": {"port": 6335}}
    assert config["storage"]["collection"] == {  # type: ignore[index]
        "shard_number_per_node": 2,
        "replication_factor": 2,
        "write_consistency_factor": 1,
    }
    spread = pod_spec(sts)["topologySpreadConstraints"]
    assert {c["whenUnsatisfiable"] for c in spread} == {"DoNotSchedule"}


def test_extra_qdrant_config_is_merged_over_the_chart_defaults() -> None:
    config = qdrant_config("ci/full-values.yaml")
    storage = config["storage"]
    assert storage["performance"] == {"max_search_threads": 2}  # type: ignore[index]
    assert storage["storage_path"] == "/qdrant/storage"  # type: ignore[index]


@pytest.mark.parametrize(
    ("sets", "message"),
    [
        ({"qdrant__replicaCount": 2}, "needs qdrant.cluster.enabled=true"),
        (
            {
                "qdrant__replicaCount": 2,
                "qdrant__cluster__enabled": True,
                "qdrant__cluster__replicationFactor": 3,
            },
            "cannot exceed qdrant.replicaCount",
        ),
        ({"qdrant__external__url": "http://q:6333"}, "external Qdrant needs"),
        ({"purpleAgent__deadlineSeconds": 60}, "deadlineSeconds"),
        ({"purpleAgent__unknownKey": 1}, "unknownKey"),
    ],
)
def test_inconsistent_values_are_refused(sets: dict[str, object], message: str) -> None:
    with pytest.raises(RenderError, match=message):
        render("ci/default-values.yaml", **sets)


def _key_ref(workload: dict[str, object], variable: str) -> dict[str, str]:
    ref: dict[str, str] = env(next(containers(workload, init=False)))[variable]["secretKeyRef"]
    return ref


def test_api_keys_come_from_one_secret_and_readers_get_the_read_only_one() -> None:
    r = render("ci/default-values.yaml")
    (secret,) = r.of_kind("Secret")
    name = secret["metadata"]["name"]
    (sts,) = r.of_kind("StatefulSet")
    assert _key_ref(sts, "QDRANT__SERVICE__API_KEY") == {"name": name, "key": "api-key"}
    read_only = {"name": name, "key": "read-only-api-key"}
    assert _key_ref(sts, "QDRANT__SERVICE__READ_ONLY_API_KEY") == read_only
    # Only the indexer writes; the MCP server and the metrics scrape only read.
    (indexer,) = r.component("Job", "indexer")
    assert _key_ref(indexer, "RETRIEVAL_QDRANT_API_KEY") == {"name": name, "key": "api-key"}
    (mcp,) = r.component("Deployment", "mcp-server")
    assert _key_ref(mcp, "RETRIEVAL_QDRANT_API_KEY") == read_only
    monitored = render(
        "ci/default-values.yaml", serviceMonitor__enabled=True, qdrant__scrapeApiPort=True
    )
    (monitor,) = monitored.component("ServiceMonitor", "qdrant")
    assert monitor["spec"]["endpoints"][0]["authorization"]["credentials"] == read_only
    # Two generated keys (base64), different from each other.
    assert len(secret["data"]["api-key"]) > 40 and len(secret["data"]["read-only-api-key"]) > 40
    assert secret["data"]["api-key"] != secret["data"]["read-only-api-key"]


def test_readers_share_the_read_write_key_when_read_only_is_off() -> None:
    r = render("ci/default-values.yaml", qdrant__apiKey__readOnly__enabled=False)
    (secret,) = r.of_kind("Secret")
    assert set(secret["data"]) == {"api-key"}
    (sts,) = r.of_kind("StatefulSet")
    assert "QDRANT__SERVICE__READ_ONLY_API_KEY" not in env(next(containers(sts)))
    (mcp,) = r.component("Deployment", "mcp-server")
    assert _key_ref(mcp, "RETRIEVAL_QDRANT_API_KEY")["key"] == "api-key"


def test_api_key_can_be_switched_off() -> None:
    r = render("ci/default-values.yaml", qdrant__apiKey__enabled=False)
    assert r.of_kind("Secret") == []
    (mcp,) = containers(r.component("Deployment", "mcp-server")[0])
    assert "RETRIEVAL_QDRANT_API_KEY" not in env(mcp)


def test_external_qdrant_renders_no_statefulset() -> None:
    r = render("ci/external-qdrant-values.yaml")
    assert r.of_kind("StatefulSet") == []
    assert r.component("Service", "qdrant") == []
    assert r.component("ConfigMap", "qdrant") == []
    assert r.of_kind("Secret") == []  # the existing Secret is used
    assert {labels(p)["app.kubernetes.io/component"] for p in r.of_kind("NetworkPolicy")} == {
        "purple-agent",
        "mcp-server",
        "indexer",
        "green-agent",
    }
    keys = {"mcp-server": "read-only-api-key", "indexer": "api-key"}
    for component, kind in (("mcp-server", "Deployment"), ("indexer", "Job")):
        e = env(next(containers(r.component(kind, component)[0], init=False)))
        assert e["RETRIEVAL_QDRANT_URL"] == "https://qdrant.vector-db.svc.cluster.local:6333"
        assert e["RETRIEVAL_QDRANT_API_KEY"]["secretKeyRef"] == {
            "name": "qdrant-credentials",
            "key": keys[component],
        }
