"""make lint-k8s (scripts/lint/artefacts.sh) fails, step by step, on a broken chart, a stale k8s/, an
invalid manifest, an insecure pod, a bad Dockerfile or shell script, a bad workflow (the
repository's own or the leaderboard's in agentbeats/), a bad compose file and a chart changed
without a new version."""

from __future__ import annotations

import re
import subprocess

import pytest

from tests.checks.repo_copy import TOOLS, RepoCopy, failed

TEMPLATES = "helm/nfcorpus-retrieval/templates"
CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: {name}
data:
  key: {value}
"""
# Valid for the API schema, refused by checkov: a privileged container that may escalate.
PRIVILEGED_POD = """apiVersion: v1
kind: Pod
metadata:
  name: broken-on-purpose
spec:
  containers:
    - name: c
      image: "busybox:1.36"
      securityContext:
        privileged: true
"""


def _render(repo: RepoCopy) -> None:
    """Re-render k8s/base as a developer would after changing the chart (make render-k8s)."""
    run = repo.run("bash", "scripts/chart/render.sh")
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_unbroken_copy_passes_every_step(repo_copy: RepoCopy) -> None:
    run = repo_copy.lint_k8s()
    assert run.returncode == 0, run.stdout + run.stderr
    assert "lint-k8s: passed (helm k8s validate checkov docker shell workflows compose chart)" in (
        run.stdout
    )


def test_an_unknown_step_is_refused(repo_copy: RepoCopy) -> None:
    assert failed(repo_copy.lint_k8s("helmlint"), "no step 'helmlint'")


def test_a_chart_helm_lint_refuses_fails(repo_copy: RepoCopy) -> None:
    # helm template renders a name Kubernetes refuses; helm lint warns, and --strict fails.
    repo_copy.write(
        f"{TEMPLATES}/broken-on-purpose.yaml", CONFIGMAP.format(name="Broken_On_Purpose", value="v")
    )
    run = repo_copy.lint_k8s("helm")
    assert failed(run, "FAIL helm lint --strict", "Broken_On_Purpose"), run.stdout + run.stderr


def test_k8s_base_out_of_date_with_the_chart_fails(repo_copy: RepoCopy) -> None:
    repo_copy.write(
        f"{TEMPLATES}/broken-on-purpose.yaml",
        CONFIGMAP.format(name="broken-on-purpose", value='"v"'),
    )
    run = repo_copy.lint_k8s("k8s")
    assert failed(run, "k8s/ is out of date with the chart"), run.stdout + run.stderr


def test_a_manifest_against_the_api_schema_fails(repo_copy: RepoCopy) -> None:
    repo_copy.write(
        f"{TEMPLATES}/broken-on-purpose.yaml", CONFIGMAP.format(name="broken-on-purpose", value="1")
    )
    _render(repo_copy)
    run = repo_copy.lint_k8s("validate")
    assert failed(run, "FAIL kubernetes-validate"), run.stdout + run.stderr


def test_a_privileged_pod_fails_checkov(repo_copy: RepoCopy) -> None:
    repo_copy.write(f"{TEMPLATES}/broken-on-purpose.yaml", PRIVILEGED_POD)
    _render(repo_copy)
    run = repo_copy.lint_k8s("checkov")
    assert failed(run, "CKV_K8S_16"), run.stdout + run.stderr


def test_a_dockerfile_hadolint_refuses_fails(repo_copy: RepoCopy) -> None:
    repo_copy.edit("Dockerfile", "\nWORKDIR /src\n", "\nWORKDIR /src\nRUN cd /src && ls\n")
    run = repo_copy.lint_k8s("docker")
    assert failed(run, "DL3003"), run.stdout + run.stderr


def test_a_shell_script_shellcheck_refuses_fails(repo_copy: RepoCopy) -> None:
    repo_copy.write("scripts/broken-on-purpose.sh", "#!/usr/bin/env bash\nls $1\n")
    run = repo_copy.lint_k8s("shell")
    assert failed(run, "SC2086"), run.stdout + run.stderr


@pytest.mark.parametrize(
    ("workflow", "complaint"),
    [
        # actionlint: a misspelt key and an undefined context
        (
            "on: push\npermissions: {}\njobs:\n  a:\n    runs-onn: ubuntu-latest\n    steps:\n"
            "      - run: echo ${{ matrix.os }}\n",
            '"runs-on" section is missing',
        ),
        # zizmor: an action by a moving tag instead of a pinned commit
        (
            "on: push\npermissions: {}\njobs:\n  a:\n    runs-on: ubuntu-latest\n    steps:\n"
            "      - uses: actions/checkout@v4\n        with:\n          persist-credentials: false\n",
            "unpinned-uses",
        ),
    ],
    ids=["actionlint", "zizmor"],
)
def test_a_bad_workflow_fails(repo_copy: RepoCopy, workflow: str, complaint: str) -> None:
    repo_copy.write(".github/workflows/broken-on-purpose.yml", workflow)
    run = repo_copy.lint_k8s("workflows")
    assert failed(run, complaint), run.stdout + run.stderr


@pytest.mark.parametrize(
    ("workflow", "old", "new", "complaint"),
    [
        # actionlint: a misspelt key of a job
        (
            "agentbeats/quick-submit.yml",
            "    permissions:\n      id-token",
            "    permission:\n      id-token",
            'unexpected key "permission"',
        ),
        (
            "agentbeats/run-scenario.yml",
            "    timeout-minutes: 330",
            "    timeout-minute: 330",
            'unexpected key "timeout-minute"',
        ),
        # zizmor: Quick Submit's runner or an action by a moving tag instead of its commit
        (
            "agentbeats/quick-submit.yml",
            r"@[0-9a-f]{40}",
            "@v2",
            "unpinned-uses",
        ),
        (
            "agentbeats/run-scenario.yml",
            r"actions/upload-artifact@[0-9a-f]{40}",
            "actions/upload-artifact@v7",
            "unpinned-uses",
        ),
    ],
    ids=[
        "quick-submit-actionlint",
        "run-scenario-actionlint",
        "quick-submit-zizmor",
        "run-scenario-zizmor",
    ],
)
def test_a_bad_leaderboard_workflow_fails(
    repo_copy: RepoCopy, workflow: str, old: str, new: str, complaint: str
) -> None:
    # The leaderboard's workflows (agentbeats/) are linted with the repository's own.
    path = repo_copy.root / workflow
    text = path.read_text()
    broken = re.sub(old, new, text, count=1)  # old: a regular expression
    assert broken != text, f"{workflow} no longer holds {old!r}: update the test"
    path.write_text(broken)
    run = repo_copy.lint_k8s("workflows")
    assert failed(run, complaint, workflow), run.stdout + run.stderr


def test_a_compose_file_against_its_schema_fails(repo_copy: RepoCopy) -> None:
    repo_copy.edit("agentbeats/compose.yaml", "services:", "broken_on_purpose: 1\nservices:")
    run = repo_copy.lint_k8s("compose")
    assert failed(run, "compose.yaml"), run.stdout + run.stderr


def test_a_values_file_yamllint_refuses_fails(repo_copy: RepoCopy) -> None:
    path = repo_copy.root / "helm/nfcorpus-retrieval/values.yaml"
    path.write_text(path.read_text() + "broken_on_purpose: yes   \n")
    run = repo_copy.lint_k8s("chart")
    assert failed(run, "trailing spaces"), run.stdout + run.stderr


def test_a_chart_change_without_a_new_version_fails(repo_copy: RepoCopy) -> None:
    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=repo_copy.root, check=True, capture_output=True)

    git("init", "-q")
    git("add", "-A")
    git("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "copy")
    repo_copy.write(
        f"{TEMPLATES}/broken-on-purpose.yaml",
        CONFIGMAP.format(name="broken-on-purpose", value='"v"'),
    )
    run = repo_copy.lint_k8s("chart")
    assert failed(run, "bump version", "broken-on-purpose.yaml"), run.stdout + run.stderr


def test_the_tools_are_the_projects_own() -> None:
    # The steps above ran the tools `make tools-k8s` installs, not whatever a PATH offers.
    assert (TOOLS / "venv" / "bin" / "checkov").is_file()
