"""The example of scaling on requests in flight (examples/prometheus-adapter-values.yaml) names
the series the purple agent exports and the HPA asks for."""

from __future__ import annotations

import re

import yaml

from services.purple_agent import metrics
from tests.k8s.rendering import CHART, render


def test_the_adapter_rule_serves_the_series_the_hpa_asks_for() -> None:
    values = yaml.safe_load((CHART / "examples" / "prometheus-adapter-values.yaml").read_text())
    (rule,) = values["rules"]["custom"]
    (family,) = metrics.IN_FLIGHT.describe()
    exported = family.name
    assert re.fullmatch(rule["name"]["matches"], exported)
    assert rule["seriesQuery"].startswith(exported + "{")
    # Per pod and namespace: what a Pods metric of an HPA is averaged over.
    assert rule["resources"]["overrides"] == {
        "namespace": {"resource": "namespace"},
        "pod": {"resource": "pod"},
    }
    (hpa,) = render("ci/full-values.yaml").component("HorizontalPodAutoscaler", "purple-agent")
    asked = [m["pods"]["metric"]["name"] for m in hpa["spec"]["metrics"] if m["type"] == "Pods"]
    assert asked == [rule["name"]["as"]]
