"""The runner scrapes the pods it counts answers on as the ServiceMonitor does: on the metrics port
(the API port answers /metrics with 404) and, with authentication on, sending the scrape token the
pod mounts (its /metrics answers nothing else)."""

from __future__ import annotations

import base64

import yaml

from harness.chart_run.__main__ import scrape_headers, scrape_port, service_url
from harness.chart_run.manifests import load_release
from tests.k8s.rendering import NAMESPACE, render

EMBEDDED = "ci/embedded-values.yaml"  # authentication on, as make chart-run runs it


def test_the_scrape_sends_the_token_each_scraped_pod_mounts() -> None:
    rendered = render(EMBEDDED)
    release = load_release(yaml.safe_dump_all(rendered.docs), NAMESPACE)
    secret = rendered.get("Secret", "nfcorpus-retrieval-auth")
    token = base64.b64decode(secret["data"]["scrape-token"]).decode()
    sent = {
        d.name.removeprefix("nfcorpus-retrieval-"): scrape_headers(d.template)
        for d in release.deployments
    }
    assert sent == {
        "purple-agent": {"authorization": f"Bearer {token}"},
        "mcp-server": {"authorization": f"Bearer {token}"},
        # The load test's client side: scraped as the servers are.
        "load-collector": {"authorization": f"Bearer {token}"},
    }


def test_with_authentication_off_the_scrape_sends_nothing() -> None:
    rendered = render(EMBEDDED, auth__enabled=False)
    release = load_release(yaml.safe_dump_all(rendered.docs), NAMESPACE)
    assert all(scrape_headers(d.template) == {} for d in release.deployments)


def test_the_scrape_goes_to_the_port_the_service_monitor_scrapes() -> None:
    rendered = render(EMBEDDED, serviceMonitor__enabled=True)
    release = load_release(yaml.safe_dump_all(rendered.docs), NAMESPACE)
    for deployment in release.deployments:
        component = deployment.name.removeprefix("nfcorpus-retrieval-")
        (monitor,) = rendered.component("ServiceMonitor", component)
        (endpoint,) = monitor["spec"]["endpoints"]
        (service,) = [
            s
            for s in rendered.component("Service", component)
            if endpoint["port"] in {p["name"] for p in s["spec"]["ports"]}
        ]
        (target,) = [p["targetPort"] for p in service["spec"]["ports"]]
        port = scrape_port(deployment.template)
        assert port == deployment.template.ports[target]
        assert ("SERVER_METRICS_PORT", str(port)) in deployment.template.env
    # The load and the evaluation still go to the API's Service, not the metrics port's.
    assert service_url(release, "purple-agent").endswith(":9009/")
