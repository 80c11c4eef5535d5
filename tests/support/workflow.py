"""A GitHub Actions step's own script, run with bash outside GitHub Actions.

The leaderboard workflow's steps that only read files and environment variables (the secret
export, the shards' merge, the provenance check) take their inputs through ``env``, never through
``${{ }}`` expressions, so their ``run`` text is exactly what a runner executes. :func:`run_step`
runs it as GitHub's ``bash`` shell does (``bash --noprofile --norc -eo pipefail``), with the
workflow's and the job's ``env``, the step's own ``env`` where it names no expression, and the
files GitHub hands a step (``GITHUB_ENV``, ``GITHUB_OUTPUT``, ``GITHUB_STEP_SUMMARY``) in a
folder of its own.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml


def _plain(env: Mapping[str, Any]) -> dict[str, str]:
    """The entries of ``env`` that hold no expression (those a test gives itself)."""
    return {k: str(v) for k, v in env.items() if "${{" not in str(v)}


@dataclass(frozen=True)
class StepRun:
    """What a step left: its exit status, output, and the files GitHub would read back."""

    process: subprocess.CompletedProcess[str]
    github_env: dict[str, str]
    outputs: dict[str, str]
    summary: str

    @property
    def output(self) -> str:
        return self.process.stdout + self.process.stderr


def read_env_file(text: str) -> dict[str, str]:
    """``NAME=value`` and ``NAME<<DELIMITER`` ... ``DELIMITER`` entries, as GitHub reads them."""
    values: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            body = []
            for inner in lines:
                if inner == delimiter:
                    break
                body.append(inner)
            else:
                raise ValueError(f"{name}: no closing {delimiter}")
            values[name] = "\n".join(body)
        elif line:
            name, value = line.split("=", 1)
            values[name] = value
    return values


def step(workflow: Path, job: str, name: str) -> dict[str, Any]:
    """The step called ``name`` of ``job`` in ``workflow``, with the env a runner gives it."""
    document = yaml.safe_load(workflow.read_text())
    found = [s for s in document["jobs"][job]["steps"] if s.get("name") == name]
    assert len(found) == 1, f"{workflow.name}: {len(found)} steps of {job} are called {name!r}"
    env = {
        **_plain(document.get("env", {})),
        **_plain(document["jobs"][job].get("env", {})),
        **_plain(found[0].get("env", {})),
    }
    return {**found[0], "env": env}


def run_step(
    workflow: Path, job: str, name: str, cwd: Path, env: Mapping[str, str] | None = None
) -> StepRun:
    """Run the step's script in ``cwd`` with ``env`` over the workflow's, as bash runs it there."""
    found = step(workflow, job, name)
    script = found["run"]
    assert not re.search(r"\$\{\{", script), f"{name}: its script holds an expression"
    github = cwd / ".github-files"
    github.mkdir(exist_ok=True)
    files = {n: github / n.lower() for n in ("GITHUB_ENV", "GITHUB_OUTPUT", "GITHUB_STEP_SUMMARY")}
    for path in files.values():
        path.write_text("")
    bash = shutil.which("bash")
    assert bash is not None
    process = subprocess.run(
        [bash, "--noprofile", "--norc", "-eo", "pipefail", "-c", script],
        cwd=cwd,
        env={
            "PATH": os.environ["PATH"],
            **{k: str(v) for k, v in files.items()},
            **found["env"],
            **(env or {}),
        },
        capture_output=True,
        text=True,
        timeout=60,
    )
    return StepRun(
        process,
        read_env_file(files["GITHUB_ENV"].read_text()),
        read_env_file(files["GITHUB_OUTPUT"].read_text()),
        files["GITHUB_STEP_SUMMARY"].read_text(),
    )
