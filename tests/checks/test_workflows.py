"""The GitHub workflows run only what ``make test`` runs (.ci/run), so CI here proves them: every
``run:`` step is ``make`` with targets that ``make test`` reaches (``sudo`` allowed, for the
distribution's packages), and nothing else. The leaderboard's workflows (agentbeats/*.yml) run in
the leaderboard repository, not here: ``make lint-k8s`` lints each of them with ours."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import yaml

from harness.processes import REPO
from tests.checks.makefile import make_graph, reachable


def workflow_problems(text: str, allowed: set[str]) -> list[str]:
    """What a workflow runs beyond ``make`` with ``allowed`` targets; empty when nothing."""
    problems = []
    for job_name, job in yaml.safe_load(text)["jobs"].items():
        for step in job.get("steps", []):
            if "run" not in step:
                continue
            for line in str(step["run"]).splitlines():
                words = shlex.split(line, comments=True)
                if words[:1] == ["sudo"]:
                    words = words[1:]
                if not words:
                    continue
                targets = [w for w in words[1:] if not w.startswith("-") and "=" not in w]
                if words[0] != "make" or not targets:
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
        assert workflow_problems(workflow.read_text(), allowed) == [], workflow.name


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
