"""A copy of the repository for CI's own checks to run in, broken one way per test.

Every test works on a copy of the repository (the files git tracks or would track, as they are
in the work tree now), breaks one thing in it and runs the very command CI runs there:
``scripts/lint/python.sh`` (make lint) or ``scripts/lint/artefacts.sh`` (make lint-k8s) with the project's own
virtual environment and tools.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from harness.processes import REPO

TOOLS = REPO / ".tools"
VENV = REPO / ".venv"


@dataclass(frozen=True)
class RepoCopy:
    """A copy of the repository's files, and CI's commands run inside it."""

    root: Path

    def write(self, relative: str, text: str) -> Path:
        path = self.root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)
        return path

    def edit(self, relative: str, old: str, new: str) -> None:
        path = self.root / relative
        text = path.read_text()
        assert old in text, f"{relative} no longer holds {old!r}: update the test"
        path.write_text(text.replace(old, new, 1))

    def lint_python(self) -> subprocess.CompletedProcess[str]:
        """make lint's script; mypy starts from the repository's cache (a cold run takes long)."""
        cache = REPO / ".mypy_cache"
        if cache.is_dir() and not (self.root / ".mypy_cache").exists():
            shutil.copytree(cache, self.root / ".mypy_cache")
        return self.run("bash", "scripts/lint/python.sh")

    def run(self, *command: str) -> subprocess.CompletedProcess[str]:
        env = {
            **os.environ,
            "TOOLS_DIR": str(TOOLS),
            "HELM": str(TOOLS / "bin" / "helm"),
            "VENV": str(VENV),
        }
        return subprocess.run(
            command, cwd=self.root, env=env, capture_output=True, text=True, timeout=600
        )

    def lint_k8s(self, *steps: str) -> subprocess.CompletedProcess[str]:
        """make lint-k8s's script, limited to ``steps`` (all of them when none)."""
        return self.run("bash", "scripts/lint/artefacts.sh", *steps)


def tracked_files() -> list[str]:
    """The files git tracks or would track (not ignored), as they are in the work tree."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=REPO,
        capture_output=True,
        check=True,
    ).stdout.decode()
    return [name for name in listed.split("\0") if name and (REPO / name).is_file()]


def failed(run: subprocess.CompletedProcess[str], *expected: str) -> bool:
    """The command failed, and its output names each of ``expected``."""
    output = run.stdout + run.stderr
    return run.returncode != 0 and all(text in output for text in expected)
