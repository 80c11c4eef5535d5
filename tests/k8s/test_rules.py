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
