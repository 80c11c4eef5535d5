"""The queries of the chart's Grafana dashboard, as Prometheus would be asked them.

Grafana fills in the dashboard's variables before it queries; this module does the same
(``$namespace`` to the namespace, ``$__rate_interval`` to a window that spans a few scrapes), so
a test or ``make observe`` can ask a real Prometheus exactly what a dashboard panel would show.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from harness.processes import REPO
from harness.prometheus import LocalPrometheus

DASHBOARD = REPO / "helm/nfcorpus-retrieval/dashboards/nfcorpus-retrieval.json"
#: Series that come from the cluster (cAdvisor, kube-state-metrics, node exporter), not from our
#: servers: a panel built on them has no data off Kubernetes.
CLUSTER_SERIES = ("container_", "kube_", "node_")
#: Series of a load test's client side, which a load collector serves
#: (:mod:`services.green_agent.load.metrics`): a panel built on them has data only while a load
#: test hands its figures to a collector that Prometheus scrapes.
LOAD_TEST_SERIES = ("loadtest_",)


@dataclass(frozen=True)
class PanelQuery:
    """One query of one panel."""

    panel: str
    legend: str
    expr: str

    @property
    def needs_cluster(self) -> bool:
        """Whether the query reads series only a Kubernetes cluster provides."""
        return any(prefix in self.expr for prefix in CLUSTER_SERIES)

    @property
    def needs_load_test(self) -> bool:
        """Whether the query reads series only a load collector serves, during a load test."""
        return any(prefix in self.expr for prefix in LOAD_TEST_SERIES)


def panel_queries(
    namespace: str, rate_interval: str = "15s", path: Path = DASHBOARD
) -> list[PanelQuery]:
    """Every panel query of the dashboard at ``path``, its variables filled in."""
    dashboard = json.loads(path.read_text())
    queries = []
    for panel in dashboard["panels"]:
        for target in panel.get("targets", []):
            expr = (
                target["expr"]
                .replace("$namespace", namespace)
                .replace("$__rate_interval", rate_interval)
            )
            legend = target.get("legendFormat", target.get("refId", ""))
            queries.append(PanelQuery(panel["title"], legend, expr))
    return queries


@dataclass(frozen=True)
class PanelValue:
    """What one panel query returns now: one value per series (NaN where the ratio is 0/0)."""

    query: PanelQuery
    series: list[tuple[dict[str, str], float]]


def panel_values(prometheus: LocalPrometheus, rate_interval: str = "15s") -> list[PanelValue]:
    """Ask ``prometheus`` every query of the dashboard, as Grafana would right now."""
    values = []
    for query in panel_queries(prometheus.namespace, rate_interval):
        result = prometheus.query(query.expr)
        series = [(r["metric"], float(r["value"][1])) for r in result]
        values.append(PanelValue(query, series))
    return values
