"""Wiring between the components of every ci scenario: services, settings, hooks, monitoring."""

from __future__ import annotations

import pytest

from tests.k8s.rendering import (
    ROOT,
    Rendered,
    RenderError,
    containers,
    env,
    labels,
    matches,
    pod_spec,
    render,
    scenarios,
    store_backend,
)


def test_purple_agent_reaches_mcp_through_its_service_and_allowed_host(rendered: Rendered) -> None:
    (purple,) = containers(rendered.component("Deployment", "purple-agent")[0])
    (mcp,) = containers(rendered.component("Deployment", "mcp-server")[0])
    mcp_service = rendered.api_service("mcp-server")
    url = env(purple)["PURPLE_MCP_URL"]
    host = url.removeprefix("http://").split("/")[0]
    assert host == f"{mcp_service['metadata']['name']}:{mcp_service['spec']['ports'][0]['port']}"
    assert url.endswith("/mcp")
    assert host in env(mcp)["MCP_ALLOWED_HOSTS"].split(",")


def test_card_url_is_the_service_url_or_the_ingress_host() -> None:
    # Fully qualified: A2A 0.3 clients post to the card's URL from any namespace.
    fqdn = "nfcorpus-retrieval-purple-agent.nfcorpus-retrieval.svc"
    default = render("ci/default-values.yaml")
    (purple,) = containers(default.component("Deployment", "purple-agent")[0])
    assert env(purple)["PURPLE_CARD_URL"] == f"http://{fqdn}.cluster.local:9009/"
    other = render("ci/default-values.yaml", clusterDomain="corp.internal")
    (purple,) = containers(other.component("Deployment", "purple-agent")[0])
    assert env(purple)["PURPLE_CARD_URL"] == f"http://{fqdn}.corp.internal:9009/"
    (mcp,) = containers(other.component("Deployment", "mcp-server")[0])
    assert "nfcorpus-retrieval-mcp-server.nfcorpus-retrieval.svc.corp.internal:8000" in env(mcp)[
        "MCP_ALLOWED_HOSTS"
    ].split(",")
    full = render("ci/full-values.yaml")
    (purple,) = containers(full.component("Deployment", "purple-agent")[0])
    assert env(purple)["PURPLE_CARD_URL"] == "https://retrieval.example.com/"
    (ingress,) = full.of_kind("Ingress")
    backend = ingress["spec"]["rules"][0]["http"]["paths"][0]["backend"]["service"]
    assert backend == {"name": "nfcorpus-retrieval-purple-agent", "port": {"name": "http"}}


@pytest.mark.parametrize("scenario", [s for s in scenarios() if store_backend(s) == "server"])
def test_mcp_server_and_indexer_share_the_qdrant_settings(scenario: str) -> None:
    rendered = render(scenario)
    (mcp,) = containers(rendered.component("Deployment", "mcp-server")[0])
    indexer_job = rendered.component("Job", "indexer")[0]
    indexer = next(c for c in containers(indexer_job, init=False))
    wait = next(c for c in pod_spec(indexer_job)["initContainers"])
    keys = ("RETRIEVAL_STORE", "RETRIEVAL_QDRANT_URL", "RETRIEVAL_COLLECTION")
    assert [env(mcp)[k] for k in keys] == [env(indexer)[k] for k in keys]
    # One Secret; the MCP server, which only searches, gets its read-only key.
    mcp_key = env(mcp)["RETRIEVAL_QDRANT_API_KEY"]["secretKeyRef"]
    indexer_key = env(indexer)["RETRIEVAL_QDRANT_API_KEY"]["secretKeyRef"]
    assert mcp_key["name"] == indexer_key["name"]
    assert (mcp_key["key"], indexer_key["key"]) == ("read-only-api-key", "api-key")
    assert env(mcp)["RETRIEVAL_STORE"] == "server"
    assert env(wait)["RETRIEVAL_QDRANT_URL"] == env(mcp)["RETRIEVAL_QDRANT_URL"]


def test_otel_settings_reach_every_service_container() -> None:
    r = render("ci/full-values.yaml")
    for workload in r.of_kind("Deployment") + r.of_kind("Job"):
        for c in containers(workload, init=False):
            e = env(c)
            assert (
                e["OTEL_EXPORTER_OTLP_ENDPOINT"] == "http://otel-collector.observability.svc:4317"
            )
            assert e["OTEL_SERVICE_NAME"].startswith("nfcorpus-")
            assert e["OTEL_RESOURCE_ATTRIBUTES"] == "deployment.environment=staging"
    (mcp,) = containers(render("ci/default-values.yaml").component("Deployment", "mcp-server")[0])
    assert "OTEL_EXPORTER_OTLP_ENDPOINT" not in env(mcp)


def test_indexer_is_a_plain_job_per_revision_so_install_wait_finishes() -> None:
    # A post-install hook runs only after `helm install --wait` has seen every pod ready, and
    # the MCP server is ready only once the index exists: the default must not be a hook.
    (job,) = render("ci/default-values.yaml").component("Job", "indexer")
    assert "annotations" not in job["metadata"]
    assert job["metadata"]["name"].endswith("-indexer-r1")  # a new Job on every upgrade
    assert pod_spec(job)["restartPolicy"] == "Never"
    (indexer,) = containers(job, init=False)
    assert env(indexer)["OMP_NUM_THREADS"] == "2"  # a batch job uses its CPU limit
    volumes = {v["name"]: v for v in pod_spec(job)["volumes"]}
    assert "emptyDir" in volumes["data"]
    (hook,) = render("ci/default-values.yaml", indexer__hook=True).component("Job", "indexer")
    annotations = hook["metadata"]["annotations"]
    assert annotations["helm.sh/hook"] == "post-install,post-upgrade"
    assert "before-hook-creation" in annotations["helm.sh/hook-delete-policy"]
    assert hook["metadata"]["name"].endswith("-indexer")


def test_web_pods_pause_before_sigterm_and_outlast_the_request_deadline(
    rendered: Rendered,
) -> None:
    graceful = _gunicorn_setting("graceful_timeout")
    for component in ("purple-agent", "mcp-server"):
        (deployment,) = rendered.component("Deployment", component)
        (container,) = containers(deployment)
        pause = int(container["lifecycle"]["preStop"]["exec"]["command"][1])
        assert pause >= 5, component
        # The drain outlasts the idle expiry of clients' pools (httpx: 5 s), then the purple
        # agent's 30 s request deadline still fits in gunicorn's graceful timeout.
        drain = int(env(container)["SERVER_DRAIN_S"])
        assert drain >= 5, component
        assert graceful >= drain + 30
        assert pod_spec(deployment)["terminationGracePeriodSeconds"] >= pause + graceful


def _gunicorn_setting(name: str) -> int:
    text = (ROOT / "services" / "gunicorn.conf.py").read_text()
    (line,) = [line for line in text.splitlines() if line.startswith(f"{name} = ")]
    return int(line.split("=")[1])


def test_the_indexer_runs_its_own_image_and_the_servers_theirs() -> None:
    # The servers' image holds what serving loads: the indexer's dependencies are in its own.
    r = render("ci/default-values.yaml")
    (job,) = r.component("Job", "indexer")
    indexer_images = {c["image"] for c in containers(job)}  # the wait for Qdrant too
    assert indexer_images == {"ghcr.io/nfcorpus-retrieval/nfcorpus-retrieval-indexer:0.1.0"}
    (mcp,) = containers(r.component("Deployment", "mcp-server")[0])
    assert mcp["image"] == "ghcr.io/nfcorpus-retrieval/nfcorpus-retrieval:0.1.0"
    (pinned,) = render("ci/full-values.yaml").component("Job", "indexer")
    (indexer,) = containers(pinned, init=False)
    assert indexer["image"] == f"registry.example.com/nfcorpus-retrieval-indexer@sha256:{'2' * 64}"


def test_indexer_can_read_the_dataset_from_an_existing_claim() -> None:
    (job,) = render("ci/external-qdrant-values.yaml").component("Job", "indexer")
    volumes = {v["name"]: v for v in pod_spec(job)["volumes"]}
    assert volumes["data"]["persistentVolumeClaim"]["claimName"] == "nfcorpus-data"
    (indexer,) = containers(job, init=False)
    data_mount = next(m for m in indexer["volumeMounts"] if m["name"] == "data")
    assert data_mount == {"name": "data", "mountPath": "/data", "subPath": "beir"}
    assert env(indexer)["RETRIEVAL_DATA_DIR"].startswith("/data/")


def test_helm_test_pod_queries_the_purple_agent_service() -> None:
    r = render("ci/default-values.yaml")
    (pod,) = r.of_kind("Pod")
    assert pod["metadata"]["annotations"]["helm.sh/hook"] == "test"
    (c,) = containers(pod)
    assert c["command"][:2] == ["python", "-c"]
    assert "message/send" in c["command"][2]
    args = dict(zip(c["command"][3::2], c["command"][4::2], strict=True))
    assert args["--url"] == (
        "http://nfcorpus-retrieval-purple-agent.nfcorpus-retrieval.svc.cluster.local:9009/"
    )
    assert args["--top-k"] == "5"
    assert render("ci/default-values.yaml", tests__enabled=False).of_kind("Pod") == []


def test_service_monitors_select_the_services_and_their_ports() -> None:
    r = render("ci/full-values.yaml")
    monitors = r.of_kind("ServiceMonitor")
    # The load collector too: the load test's client side (the generators' pods come and go).
    assert {labels(m)["app.kubernetes.io/component"] for m in monitors} == {
        "purple-agent",
        "mcp-server",
        "load-collector",
        "qdrant",
    }
    for monitor in monitors:
        assert labels(monitor)["release"] == "kube-prometheus-stack"
        component = labels(monitor)["app.kubernetes.io/component"]
        # The Service of the port the endpoint names: our servers' metrics port (never the API
        # port, which answers /metrics with 404), Qdrant's API port.
        (endpoint,) = monitor["spec"]["endpoints"]
        assert endpoint["port"] == ("http" if component == "qdrant" else "metrics")
        (service,) = [
            s
            for s in r.component("Service", component)
            if "clusterIP" not in s["spec"]
            and endpoint["port"] in {p["name"] for p in s["spec"]["ports"]}
        ]
        assert matches(monitor["spec"]["selector"]["matchLabels"], labels(service))
    qdrant = next(m for m in monitors if labels(m)["app.kubernetes.io/component"] == "qdrant")
    assert (
        qdrant["spec"]["endpoints"][0]["authorization"]["credentials"]["name"]
        == "nfcorpus-retrieval-qdrant-api-key"
    )
    assert render("ci/default-values.yaml").of_kind("ServiceMonitor") == []


def test_the_load_collector_s_port_is_not_the_metrics_port() -> None:
    # The collector serves /metrics on the metrics port alone: on its own port it would refuse
    # to start (services.common.server), so the render refuses first.
    with pytest.raises(RenderError, match=r"loadTest\.collector\.port 9090 is the metrics port"):
        render("ci/default-values.yaml", loadTest__enabled=True, loadTest__collector__port=9090)


def test_dashboard_configmap_carries_the_sidecar_label() -> None:
    (cm,) = render("ci/full-values.yaml").component("ConfigMap", "dashboard")
    assert labels(cm)["grafana_dashboard"] == "1"
    assert list(cm["data"]) == ["nfcorpus-retrieval.json"]
    assert render("ci/default-values.yaml").component("ConfigMap", "dashboard") == []


def test_each_server_answers_the_names_it_is_reached_by_and_no_other() -> None:
    """``<PREFIX>_ALLOWED_HOSTS``: the Service's names, a port-forward, and the published names."""
    full = render("ci/full-values.yaml", **{"purpleAgent.allowedHosts[0]": "agents.example:443"})
    (purple,) = containers(full.component("Deployment", "purple-agent")[0])
    hosts = env(purple)["PURPLE_ALLOWED_HOSTS"].split(",")
    fqdn = "nfcorpus-retrieval-purple-agent.nfcorpus-retrieval.svc.cluster.local:9009"
    assert {fqdn, "localhost:*", "127.0.0.1:*", "[::1]:*"} <= set(hosts)
    assert "retrieval.example.com" in hosts  # the ingress host, which the card URL names too
    assert "agents.example:443" in hosts  # a value's extra name
    assert not any(h == "*" or h.startswith("*") for h in hosts)
    default = render("ci/default-values.yaml")
    (mcp,) = containers(default.component("Deployment", "mcp-server")[0])
    assert "*" not in env(mcp)["MCP_ALLOWED_HOSTS"].split(",")
