"""make lint (scripts/lint/python.sh) fails on a lint error, a formatting error or a type error, in
any Python file of the repository, the index-time code included (a linter's excludes easily catch
a folder by its name)."""

from __future__ import annotations

import subprocess
import tomllib

from harness.processes import REPO
from tests.checks.repo_copy import VENV, RepoCopy, failed, tracked_files

INDEXING = "services/retrieval/indexing/broken_on_purpose.py"


def test_the_unbroken_copy_passes(repo_copy: RepoCopy) -> None:
    run = repo_copy.lint_python()
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_lint_error_in_the_index_builder_fails_lint(repo_copy: RepoCopy) -> None:
    repo_copy.write(INDEXING, '"""Broken on purpose."""\n\nimport os\n')
    run = repo_copy.lint_python()
    assert failed(run, "broken_on_purpose.py", "F401"), run.stdout + run.stderr


def test_a_formatting_error_fails_lint(repo_copy: RepoCopy) -> None:
    repo_copy.write(INDEXING, '"""Broken on purpose."""\n\nVALUES = [1,2]\n')
    run = repo_copy.lint_python()
    assert failed(run, "would be reformatted", "broken_on_purpose.py"), run.stdout + run.stderr


def test_a_type_error_fails_lint(repo_copy: RepoCopy) -> None:
    repo_copy.write(INDEXING, '"""Broken on purpose."""\n\n\ndef _f() -> int:\n    return "x"\n')
    run = repo_copy.lint_python()
    assert failed(run, "broken_on_purpose.py", "Incompatible return value"), run.stdout + run.stderr


def test_every_python_file_the_project_ships_is_linted_and_type_checked() -> None:
    tracked = {name for name in tracked_files() if name.endswith(".py")}
    shown = subprocess.run(
        [str(VENV / "bin" / "ruff"), "check", "--show-files", "."],
        cwd=REPO,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    linted = {str(p.relative_to(REPO)) for p in map(REPO.joinpath, shown) if p.suffix == ".py"}
    assert tracked <= linted, sorted(tracked - linted)
    # mypy checks the folders pyproject.toml lists; every tracked file lies under one of them.
    folders = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
    unchecked = {f for f in tracked if not any(f.startswith(d.rstrip("/") + "/") for d in folders)}
    assert not unchecked, sorted(unchecked)
