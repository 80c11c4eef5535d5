"""The GitHub workflows run only what ``make test`` runs (.ci/run), so CI here proves them: every
``run:`` step is ``make`` with targets that ``make test`` reaches (``sudo`` allowed, for the
distribution's packages), and nothing else. The leaderboard's workflows (agentbeats/*.yml) run in
the leaderboard repository, not here: ``make lint-k8s`` lints each of them with ours.

One job is the exception, by name (:data:`CLUSTER_JOBS`): the chart's install on a kind cluster,
which needs a Docker daemon and a registry no machine of our CI has. Its ``make`` targets are still
``make test``'s; its other commands are held here to what ``make chart-run`` (its gate here)
checks: the pinned cluster, the scenario, ``helm install --wait``, ``helm test``, the load-test
Job and its budgets."""

from __future__ import annotations

import re
import shlex
from collections.abc import Collection
from pathlib import Path
from typing import Any

import yaml

from harness.chart_run.load_test import BREACH_BUDGET
from harness.processes import REPO
from services.green_agent.load.thresholds import EXIT_BREACHED
from tests.checks.makefile import make_graph, reachable

#: (workflow file, job): the jobs that need a cluster, and may run more than make targets.
CLUSTER_JOBS = {("chart.yml", "kind")}


def _make_words(line: str) -> list[str] | None:
    """The words of a ``make`` command line (``sudo`` dropped), or None for another command."""
    try:
        words = shlex.split(line, comments=True)
    except ValueError:  # a line of a longer shell construct (a quote that closes further on)
        return None
    if words[:1] == ["sudo"]:
        words = words[1:]
    return words if words[:1] == ["make"] or not words else None


def workflow_problems(
    text: str, allowed: set[str], cluster_jobs: Collection[str] = ()
) -> list[str]:
    """What a workflow runs beyond ``make`` with ``allowed`` targets; empty when nothing.

    A job of ``cluster_jobs`` may run other commands too; its ``make`` targets must be allowed.
    """
    problems = []
    for job_name, job in yaml.safe_load(text)["jobs"].items():
        for step in job.get("steps", []):
            if "run" not in step:
                continue
            for line in str(step["run"]).splitlines():
                words = _make_words(line)
                if words == [] or (words is None and job_name in cluster_jobs):
                    continue
                targets = [w for w in (words or [])[1:] if not w.startswith("-") and "=" not in w]
                if not targets:
                    problems.append(f"{job_name}: runs {line.strip()!r}, not a make target")
                    continue
                for target in targets:
                    if target not in allowed:
                        problems.append(f"{job_name}: make {target} is not part of make test")
    return problems


def test_make_test_reaches_the_image_chart_and_lint_targets() -> None:
    reached = reachable(make_graph(), "test")
    assert {"lint", "lint-k8s", "tools-k8s", "image", "test-image", "tools-image"} <= reached


def test_the_workflows_run_only_what_make_test_runs() -> None:
    allowed = reachable(make_graph(), "test")
    workflows = sorted((REPO / ".github" / "workflows").glob("*.yml"))
    assert workflows
    for workflow in workflows:
        cluster = {job for name, job in CLUSTER_JOBS if name == workflow.name}
        assert workflow_problems(workflow.read_text(), allowed, cluster) == [], workflow.name


def test_a_workflow_running_something_else_is_caught() -> None:
    allowed = reachable(make_graph(), "test")
    workflow = """
jobs:
  a:
    steps:
      - run: make lint-agentbeats
      - run: |
          make test-image
          python -m pytest tests/conformance
      - uses: actions/checkout@v4
"""
    assert workflow_problems(workflow, allowed) == [
        "a: make lint-agentbeats is not part of make test",
        "a: runs 'python -m pytest tests/conformance', not a make target",
    ]


def test_the_makefile_graph_follows_prerequisites_and_sub_makes(tmp_path: Path) -> None:
    (tmp_path / "Makefile").write_text(
        "test: lint  ## the suite\n\t$(PY) -m pytest\n\t$(MAKE) --no-print-directory image\n"
        "lint: $(STAMP)\n\truff check .\nimage: base\n\tbuild\nother:\n\techo\n"
    )
    graph = make_graph(tmp_path)
    assert reachable(graph, "test") == {"test", "lint", "image", "base"}


def test_make_lint_k8s_lints_every_leaderboard_workflow() -> None:
    script = (REPO / "scripts/lint/artefacts.sh").read_text()
    (line,) = [x for x in script.splitlines() if x.strip().startswith("leaderboard=(")]
    linted = sorted(re.findall(r"/agentbeats/([\w.-]+\.yml)", line))
    assert linted == sorted(p.name for p in (REPO / "agentbeats").glob("*.yml"))
    assert linted == ["quick-submit.yml", "run-scenario.yml"]


def test_a_cluster_job_may_run_other_commands_but_only_make_tests_targets() -> None:
    allowed = reachable(make_graph(), "test")
    workflow = """
jobs:
  kind:
    steps:
      - run: |
          make tools-k8s
          kubectl get pods --namespace "$NAMESPACE"
          make lint-agentbeats
  lint:
    steps:
      - run: kubectl get pods
"""
    assert workflow_problems(workflow, allowed, {"kind"}) == [
        "kind: make lint-agentbeats is not part of make test",
        "lint: runs 'kubectl get pods', not a make target",
    ]


def _kind_job() -> dict[str, Any]:
    workflow = yaml.safe_load((REPO / ".github/workflows/chart.yml").read_text())
    job: dict[str, Any] = workflow["jobs"]["kind"]
    return job


def test_every_action_of_every_workflow_is_pinned_by_commit() -> None:
    for workflow in sorted((REPO / ".github" / "workflows").glob("*.yml")):
        for job in yaml.safe_load(workflow.read_text())["jobs"].values():
            for step in job.get("steps", []):
                if "uses" in step:
                    assert re.fullmatch(r"[\w.-]+/[\w.-]+@[0-9a-f]{40}", step["uses"]), step


def test_the_kind_job_makes_a_pinned_cluster_of_the_image_make_test_builds() -> None:
    job = _kind_job()
    steps = job["steps"]
    (cluster,) = [s for s in steps if str(s.get("uses", "")).startswith("helm/kind-action@")]
    assert re.fullmatch(r"v\d+\.\d+\.\d+", cluster["with"]["version"])
    assert re.fullmatch(r"kindest/node:v[\d.]+@sha256:[0-9a-f]{64}", cluster["with"]["node_image"])
    runs = [str(s.get("run", "")) for s in steps]
    # The image as image.yml builds it, helm from make tools-k8s, before the cluster needs them.
    before = runs[: steps.index(cluster)]
    assert {"sudo make tools-image", "make image", "make tools-k8s"} <= set(before)
    assert job["env"]["HELM"] == ".tools/bin/helm"
    assert any("kind load image-archive" in run for run in runs[steps.index(cluster) :])


def test_the_kind_job_checks_what_make_chart_run_checks() -> None:
    job = _kind_job()
    # make chart-run's scenario, and its budget set to fail.
    runner = (REPO / "harness/chart_run/__main__.py").read_text()
    (scenario,) = re.findall(r'"--values", type=Path, default=CHART / "ci" / "([\w.-]+)"', runner)
    assert job["env"]["VALUES"] == f"helm/nfcorpus-retrieval/ci/{scenario}"
    assert job["env"]["BREACH_BUDGET"] == BREACH_BUDGET
    script = "\n".join(str(s.get("run", "")) for s in job["steps"])
    order = [
        '"$HELM" install',  # waited for, with Pod Security "restricted" enforced
        '"$HELM" test',
        '"$HELM" upgrade',  # the load test on: the Job must complete, its budgets met
        '"$HELM" upgrade',  # the budget set to fail: the Job must fail, a pod exiting 3
    ]
    at = 0
    for command in order:
        at = script.index(command, at) + 1
    assert "pod-security.kubernetes.io/enforce=restricted" in script
    install = script[script.index('"$HELM" install') : script.index('"$HELM" test')]
    assert "--wait" in install and '--values "$VALUES"' in install
    for expected in (
        "[[ $state == Complete ]]",
        'if t["passed"] is not True',
        r"loadTest.thresholds=[\"$BREACH_BUDGET\"]",
        "[[ $state == Failed ]]",
        f"[[ $code == {EXIT_BREACHED} ]]",  # the failed pod's exit status: a breach's
        "if verdicts != [False]",  # the collector's report marks the budget breached
    ):
        assert expected in script, expected
    # When anything fails, the cluster's state and every pod's log are printed.
    (logs,) = [s for s in job["steps"] if s.get("if") == "failure()"]
    assert "kubectl logs" in logs["run"] and "--previous" in logs["run"]
