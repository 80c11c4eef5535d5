"""The alerting and recording rules: promtool checks them and runs their unit tests (each alert
fires on a synthetic failure and stays quiet on healthy series), and the chart embeds exactly
them in its PrometheusRule, with the runbook links resolved."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from tests.k8s.rendering import CHART, ROOT, render

RULES = CHART / "rules"
RULE_FILE = RULES / "nfcorpus-retrieval.rules.yaml"


def _promtool() -> str:
    path = shutil.which("promtool")
    if path is None:
        pytest.fail("promtool is missing: run 'make tools-prometheus' (Debian's prometheus)")
    return path


def _alerts() -> list[dict[str, object]]:
    groups = yaml.safe_load(RULE_FILE.read_text())["groups"]
    return [rule for group in groups for rule in group["rules"] if "alert" in rule]


def _check_rules(path: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [_promtool(), "check", "rules", str(path)], capture_output=True, text=True
    )


def test_promtool_accepts_the_rules() -> None:
    result = _check_rules(RULE_FILE)
    assert result.returncode == 0, result.stdout + result.stderr


def test_promtool_refuses_a_broken_rule(tmp_path: Path) -> None:
    groups = yaml.safe_load(RULE_FILE.read_text())
    groups["groups"][0]["rules"][0]["expr"] = "rate(broken_on_purpose[5m]"  # unclosed
    broken = tmp_path / "broken.rules.yaml"
    broken.write_text(yaml.safe_dump(groups))
    result = _check_rules(broken)
    assert result.returncode != 0 and "unclosed" in result.stdout + result.stderr, result.stdout


def test_every_alert_passes_its_promtool_unit_tests() -> None:
    result = subprocess.run(
        [_promtool(), "test", "rules", "tests.yaml"], cwd=RULES, capture_output=True, text=True
    )
    assert result.returncode == 0, result.stdout + result.stderr
    tested = set(re.findall(r"alertname: (\w+)", (RULES / "tests.yaml").read_text()))
    assert {str(a["alert"]) for a in _alerts()} <= tested  # every alert has a test


def test_every_alert_says_how_bad_what_and_where_to_look() -> None:
    runbooks = (ROOT / "docs" / "runbooks.md").read_text()
    anchors = set(re.findall(r'<a id="([a-z]+)"></a>', runbooks))
    for alert in _alerts():
        labels, notes = alert["labels"], alert["annotations"]
        assert isinstance(labels, dict) and labels["severity"] in ("page", "ticket")
        assert isinstance(notes, dict) and {"summary", "description", "runbook_url"} <= set(notes)
        anchor = str(notes["runbook_url"]).removeprefix("RUNBOOKS#")
        assert anchor in anchors, f"docs/runbooks.md has no section for {alert['alert']}"


def test_the_chart_embeds_the_rule_file() -> None:
    assert render().of_kind("PrometheusRule") == []  # off by default, like the ServiceMonitor
    base = "https://runbooks.example/nfcorpus.md"
    rendered = render(prometheusRule__enabled=True, prometheusRule__runbookBaseUrl=base).of_kind(
        "PrometheusRule"
    )
    (rule,) = rendered
    expected = yaml.safe_load(RULE_FILE.read_text().replace("RUNBOOKS", base))
    assert rule["spec"] == expected


def _operator_jobs() -> set[str]:
    """The ``job`` the Prometheus Operator gives each rendered ServiceMonitor's targets.

    Without ``jobLabel`` it is the name of the Service whose port the endpoint names: a
    ServiceMonitor selects by labels, and only the Service with that port yields targets.
    """
    rendered = render(
        serviceMonitor__enabled=True, qdrant__scrapeApiPort=True, loadTest__enabled=True
    )
    jobs = set()
    for monitor in rendered.of_kind("ServiceMonitor"):
        assert "jobLabel" not in monitor["spec"]
        selector = monitor["spec"]["selector"]
        absent = {e["key"] for e in selector.get("matchExpressions", [])}
        assert all(e["operator"] == "DoesNotExist" for e in selector.get("matchExpressions", []))
        ports = {e["port"] for e in monitor["spec"]["endpoints"]}
        for service in rendered.of_kind("Service"):
            service_labels = service["metadata"].get("labels") or {}
            named = {p.get("name") for p in service["spec"]["ports"]}
            chosen = all(service_labels.get(k) == v for k, v in selector["matchLabels"].items())
            if chosen and not absent & set(service_labels) and named & ports:
                jobs.add(service["metadata"]["name"])
    return jobs


def test_the_target_alerts_match_the_jobs_the_operator_names() -> None:
    # The rules must find the scraped servers under the job a cluster gives them, not under
    # a name of our own (the harness's Prometheus names its jobs the same way); each
    # component is scraped through one Service, so under one job.
    jobs = _operator_jobs()
    assert len(jobs) == 4 and not any(j.endswith("-headless") for j in jobs), jobs
    down = next(a for a in _alerts() if a["alert"] == "NfcorpusTargetDown")
    target_regex = re.search(r'job=~"([^"]+)"', str(down["expr"]))
    assert target_regex is not None
    watched = {j for j in jobs if re.fullmatch(target_regex[1], j)}
    for component in ("purple-agent", "mcp-server", "qdrant"):
        assert any(component in j for j in watched), (component, jobs)
    no_mcp = next(a for a in _alerts() if a["alert"] == "NfcorpusNoMcpServer")
    mcp_regex = re.search(r'job=~"([^"]+)"', str(no_mcp["expr"]))
    assert mcp_regex is not None
    assert [j for j in jobs if re.fullmatch(mcp_regex[1], j)] == [
        j for j in jobs if "mcp-server" in j
    ]
